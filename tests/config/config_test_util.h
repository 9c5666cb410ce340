// Helpers shared by the config tests: parse text and return the error message.
#pragma once

#include <string>
#include <vector>

#include "config/config.h"

namespace trident::testing_config {

/// The ConfigError message from parsing `text` as "configs/x.toml", or "" if it parsed.
inline std::string error_of(const std::string& text, const std::vector<std::string>& overrides = {},
                            int world_size = 0) {
  try {
    parse_config(text, "configs/x.toml", overrides, world_size);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

}  // namespace trident::testing_config
