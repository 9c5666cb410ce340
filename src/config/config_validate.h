// Validation of a parsed TrainConfig: each key against its allowed values, then the
// checks across keys (divisibility of the layout, batch sizes, world size). Internal.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "config/config.h"

namespace trident::config_detail {

/// Where each key's value came from, so that a message can point at it.
class Origins {
 public:
  explicit Origins(std::string source) : source_(std::move(source)) {}

  void set_file_line(const std::string& key, int line) {
    where_[key] = source_ + ":" + std::to_string(line);
  }
  void set_override(const std::string& key, const std::string& text) {
    where_[key] = "--set " + text;
  }
  /// "file:line", "--set section.key=value", or the file name for a default value.
  std::string where(const std::string& key) const {
    const auto it = where_.find(key);
    return it == where_.end() ? source_ : it->second;
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::map<std::string, std::string> where_;
};

/// Checks `c` and resolves parallel.dp (see load_config). Returns the error messages,
/// each starting with the location of the key it names; empty when `c` is valid.
std::vector<std::string> validate_config(TrainConfig& c, const Origins& origins, int world_size);

}  // namespace trident::config_detail
