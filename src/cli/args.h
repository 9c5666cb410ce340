// Command-line parsing shared by the subcommands: each declares its options in a
// CommandSpec, and one parser checks them, the positional counts and --set, and writes --help.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "config/input_error.h"  // InputError

namespace trident::cli {

struct OptionSpec {
  std::string name;        // without dashes: "world"
  std::string value_name;  // empty for a flag: "N"
  std::string help;
  bool required = false;  // parse_args refuses a command line without it
  // A list: takes every word after it up to the next option (`--in a b`), and repeats
  // (`--in a --in b`); the words are in Args::lists.
  bool list = false;
  // The only values it accepts ("1f1b", "gpipe"); empty: any value.
  std::vector<std::string> choices = {};
};

struct CommandSpec {
  std::string name;     // "check"
  std::string usage;    // "trident check CONFIG [--world N] [--set section.key=value ...]"
  std::string summary;  // one paragraph
  std::vector<OptionSpec> options;
  int min_positional = 0;
  int max_positional = 0;
  std::string positional_name = "";  // "CONFIG", for the message when it is missing
  bool reads_config = true;          // false: --set is refused, and --help leaves it out
};

/// A malformed command line: the message names the argument; exit code 2.
class UsageError : public InputError {
 public:
  using InputError::InputError;
};

struct Args {
  std::vector<std::string> positional;
  std::map<std::string, std::string> options;             // flags map to "1"
  std::map<std::string, std::vector<std::string>> lists;  // options declared as lists
  std::vector<std::string> sets;                          // every --set, in order
  bool help = false;

  bool has(const std::string& name) const {
    return options.count(name) > 0 || lists.count(name) > 0;
  }
  std::string get(const std::string& name, const std::string& fallback = "") const;
  long long get_int(const std::string& name, long long fallback) const;
  /// As get_int, and at least 1: "--pp expects a positive integer, got '0'".
  int get_positive_int(const std::string& name, int fallback) const;
  /// A finite number > 0: "--forward-cost expects a positive number, got '-1'".
  double get_positive_double(const std::string& name, double fallback) const;
};

/// Parses argv after the subcommand name against `spec`; --set (when the command reads a
/// config) and --help are always accepted. Unless --help is given, checks the positional
/// count and the required options. Throws UsageError naming the argument.
Args parse_args(const CommandSpec& spec, const std::vector<std::string>& argv);

/// The text of `trident NAME --help`, generated from `spec`.
std::string help_text(const CommandSpec& spec);

/// A subcommand: its declared command line, whether it runs under MPI, a one-line summary
/// for `trident --help`, and the function that runs it on parsed arguments (exit code).
struct Command {
  CommandSpec spec;
  bool uses_mpi = false;  // launched under mpirun; MPI is initialised around it
  std::string brief;
  int (*run)(const Args& args) = nullptr;
  /// Saves and exits on a preemption signal: the signals are caught from the start.
  bool preemptible = false;
};

/// The text of `trident --help`: the usage line and one line per command.
std::string overview_text(const std::vector<Command>& commands);

/// The command named `name`, or nullptr.
const Command* find_command(const std::vector<Command>& commands, const std::string& name);

}  // namespace trident::cli
