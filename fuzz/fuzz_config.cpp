// libFuzzer harness: the TOML config loader (parse, --set overrides, validation) on any
// bytes. Bad input must end in a ConfigError (InputError), never a crash or another error.
#include <cstddef>  // size_t
#include <cstdint>  // uint8_t
#include <string>
#include <vector>

#include "config/config.h"  // parse_config, ConfigError

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  // A line starting with "--set " becomes an override, as on the command line.
  std::vector<std::string> sets;
  std::string toml;
  size_t at = 0;
  while (at <= text.size()) {
    const size_t end = std::min(text.find('\n', at), text.size());
    const std::string line = text.substr(at, end - at);
    if (line.rfind("--set ", 0) == 0)
      sets.push_back(line.substr(6));
    else
      toml += line + "\n";
    at = end + 1;
  }
  for (int world : {0, 8}) {
    try {
      trident::TrainConfig c = trident::parse_config(toml, "<fuzz>", sets, world);
      (void)trident::to_toml(c);
    } catch (const trident::InputError&) {
      // the expected end of bad input
    }
  }
  return 0;
}
