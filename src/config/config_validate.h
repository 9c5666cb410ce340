// Validation of a parsed TrainConfig: each key against its allowed values, then the
// checks across keys (divisibility of the layout, batch sizes, world size). Internal.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include "config/config.h"

namespace trident::config_detail {

/// Where each key's value came from, so that a message can point at it.
class Origins {
 public:
  explicit Origins(std::string source) : source_(std::move(source)) {}

  /// `chosen`: false for a config trident wrote itself (a checkpoint's), whose keys are a
  /// record of a run rather than choices (older versions wrote every key).
  void set_file_line(const std::string& key, int line, bool chosen) {
    where_[key] = source_ + ":" + std::to_string(line);
    if (chosen) chosen_.insert(key);
  }
  void set_override(const std::string& key, const std::string& text) {
    where_[key] = "--set " + text;
    chosen_.insert(key);
  }
  /// Whether the user set `key`, in the file or with --set (rather than left it default).
  bool chosen(const std::string& key) const { return chosen_.count(key) > 0; }
  /// "file:line", "--set section.key=value", or the file name for a default value.
  std::string where(const std::string& key) const {
    const auto it = where_.find(key);
    return it == where_.end() ? source_ : it->second;
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
  std::map<std::string, std::string> where_;
  std::set<std::string> chosen_;
};

using Errors = std::vector<std::string>;

/// data.source or [[data.mix]] (not both; a mixture clears data.source), the mixtures'
/// weights and names (default names filled in), eval.source apart from the training
/// files (validate_data.cpp).
void check_data_sources(TrainConfig& c, const Origins& origins, int world_size, Errors& errors);
/// The evaluation's keys against each other and its held-out data (validate_data.cpp).
void check_eval(TrainConfig& c, const Origins& origins, int world_size, Errors& errors);

/// Checks `c` and resolves parallel.dp (see load_config). Returns the error messages,
/// each starting with the location of the key it names; empty when `c` is valid.
std::vector<std::string> validate_config(TrainConfig& c, const Origins& origins, int world_size);

}  // namespace trident::config_detail
