// The suite's one rule for CI, for C++ tests (tests/scripts/ci_common.sh has it for scripts):
// CI is on when the variable CI is set to anything but "", "false" or "0"; .ci/run exports
// CI=true. Under CI a test that cannot run here fails instead of skipping.
#pragma once
#include <cstdlib>  // std::getenv
#include <string>

namespace trident::testing {

inline bool under_ci() {
  const char* value = std::getenv("CI");
  if (value == nullptr) return false;
  const std::string v = value;
  return !(v.empty() || v == "false" || v == "0");
}

}  // namespace trident::testing
