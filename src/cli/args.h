// Command-line parsing shared by the subcommands: declared options, --set overrides,
// positional arguments, and generated --help text.
#pragma once
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace trident::cli {

struct OptionSpec {
  std::string name;        // without dashes: "world"
  std::string value_name;  // empty for a flag: "N"
  std::string help;
};

struct CommandSpec {
  std::string name;     // "check"
  std::string usage;    // "trident check CONFIG [--world N] [--set section.key=value ...]"
  std::string summary;  // one paragraph
  std::vector<OptionSpec> options;
  int min_positional = 0;
  int max_positional = 0;
};

/// A malformed command line: the message names the argument; exit code 2.
class UsageError : public std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;  // flags map to "1"
  std::vector<std::string> sets;               // every --set, in order
  bool help = false;

  bool has(const std::string& name) const { return options.count(name) > 0; }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  long long get_int(const std::string& name, long long fallback) const;
};

/// Parses argv after the subcommand name; --set is always accepted, --help always.
Args parse_args(const CommandSpec& spec, const std::vector<std::string>& argv);
std::string help_text(const CommandSpec& spec);

}  // namespace trident::cli
