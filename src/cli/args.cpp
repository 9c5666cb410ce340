// Parsing of subcommand arguments against their declared options, and the help texts.
#include "cli/args.h"

#include <cmath>    // std::isfinite
#include <cstdio>   // std::snprintf
#include <sstream>  // std::ostringstream

namespace trident::cli {
namespace {

bool is_option(const std::string& word) {
  return (word.rfind("--", 0) == 0 && word.size() > 2) || word == "-h";
}

/// "a", "a or b", "a, b or c" (with `last` = " or ").
std::string join(const std::vector<std::string>& words, const std::string& prefix,
                 const std::string& last) {
  std::string text;
  for (size_t i = 0; i < words.size(); ++i) {
    if (i > 0) text += i + 1 == words.size() ? last : ", ";
    text += prefix + words[i];
  }
  return text;
}

std::string see_help(const CommandSpec& spec) { return " (see trident " + spec.name + " --help)"; }

const OptionSpec* find_option(const CommandSpec& spec, const std::string& name) {
  for (const auto& o : spec.options)
    if (o.name == name) return &o;
  return nullptr;
}

[[noreturn]] void unknown_option(const CommandSpec& spec, const std::string& name) {
  std::ostringstream msg;
  msg << "unknown option --" << name << "; valid options:";
  for (const auto& o : spec.options) msg << " --" << o.name;
  msg << (spec.reads_config ? " --set --help" : " --help");
  throw UsageError(msg.str());
}

/// Stores the value of a valued option, refusing one outside its choices.
void set_value(Args& args, const OptionSpec& opt, const std::string& value) {
  if (!opt.choices.empty()) {
    bool known = false;
    for (const auto& c : opt.choices) known = known || c == value;
    if (!known)
      throw UsageError("--" + opt.name + " must be " + join(opt.choices, "", " or ") + ", got '" +
                       value + "'");
  }
  args.options[opt.name] = value;
}

void check_complete(const CommandSpec& spec, const Args& args) {
  const int n = static_cast<int>(args.positional.size());
  if (n < spec.min_positional) {
    const std::string what = spec.positional_name.empty() ? "an argument" : spec.positional_name;
    throw UsageError("missing " + what + see_help(spec));
  }
  if (n > spec.max_positional)
    throw UsageError("unexpected argument '" + args.positional[spec.max_positional] + "'" +
                     see_help(spec));
  std::vector<std::string> missing;
  for (const auto& o : spec.options)
    if (o.required && (!args.has(o.name) || (!o.list && args.get(o.name).empty())))
      missing.push_back(o.name);
  if (!missing.empty())
    throw UsageError(join(missing, "--", " and ") + (missing.size() == 1 ? " is" : " are") +
                     " required" + see_help(spec));
}

}  // namespace

std::string Args::get(const std::string& name, const std::string& fallback) const {
  auto it = options.find(name);
  return it == options.end() ? fallback : it->second;
}

long long Args::get_int(const std::string& name, long long fallback) const {
  auto it = options.find(name);
  if (it == options.end()) return fallback;
  try {
    size_t used = 0;
    long long v = std::stoll(it->second, &used);
    if (used == it->second.size()) return v;
  } catch (const std::exception&) {
  }
  throw UsageError("--" + name + " expects an integer, got '" + it->second + "'");
}

int Args::get_positive_int(const std::string& name, int fallback) const {
  auto it = options.find(name);
  if (it == options.end()) return fallback;
  const std::string& text = it->second;
  size_t used = 0;
  int value = 0;
  try {
    value = std::stoi(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || value < 1)
    throw UsageError("--" + name + " expects a positive integer, got '" + text + "'");
  return value;
}

double Args::get_positive_double(const std::string& name, double fallback) const {
  auto it = options.find(name);
  if (it == options.end()) return fallback;
  const std::string& text = it->second;
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !(value > 0.0) || !std::isfinite(value))
    throw UsageError("--" + name + " expects a positive number, got '" + text + "'");
  return value;
}

Args parse_args(const CommandSpec& spec, const std::vector<std::string>& argv) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--help" || a == "-h") {
      args.help = true;
      continue;
    }
    if (!is_option(a)) {
      args.positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::string value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "set") {
      if (!spec.reads_config)
        throw UsageError(spec.name + " reads no config, so --set has nothing to set");
      if (!inline_value && i + 1 >= argv.size()) throw UsageError("--set needs section.key=value");
      args.sets.push_back(inline_value ? value : argv[++i]);
      continue;
    }
    const OptionSpec* opt = find_option(spec, name);
    if (!opt) unknown_option(spec, name);
    if (opt->list) {
      auto& words = args.lists[name];
      const size_t before = words.size();
      if (inline_value) words.push_back(value);
      while (!inline_value && i + 1 < argv.size() && !is_option(argv[i + 1]))
        words.push_back(argv[++i]);
      if (words.size() == before) {
        std::string one = opt->value_name;
        if (one.size() > 3 && one.compare(one.size() - 3, 3, "...") == 0)
          one.resize(one.size() - 3);
        throw UsageError("--" + name + " needs at least one " + one);
      }
    } else if (opt->value_name.empty()) {
      args.options[name] = "1";
    } else if (inline_value) {
      set_value(args, *opt, value);
    } else {
      if (i + 1 >= argv.size())
        throw UsageError("--" + name + " needs a value (" + opt->value_name + ")");
      set_value(args, *opt, argv[++i]);
    }
  }
  if (!args.help) check_complete(spec, args);
  return args;
}

std::string help_text(const CommandSpec& spec) {
  std::ostringstream out;
  out << "usage: " << spec.usage << "\n\n" << spec.summary << "\n\noptions:\n";
  auto line = [&](const std::string& left, const std::string& help) {
    out << "  " << left;
    if (left.size() < 28)
      out << std::string(28 - left.size(), ' ');
    else
      out << "\n" << std::string(30, ' ');
    out << help << "\n";
  };
  for (const auto& o : spec.options)
    line("--" + o.name + (o.value_name.empty() ? "" : " " + o.value_name),
         o.help + (o.required ? " (required)" : ""));
  if (spec.reads_config) line("--set section.key=value", "override a config key (repeatable)");
  line("--help", "show this help");
  return out.str();
}

std::string overview_text(const std::vector<Command>& commands) {
  std::string text = "usage: trident SUBCOMMAND [options]   (trident SUBCOMMAND --help)\n\n";
  for (const auto& c : commands) {
    char name[32];
    std::snprintf(name, sizeof name, "  %-13s ", c.spec.name.c_str());
    text += name + c.brief + "\n";
  }
  return text;
}

const Command* find_command(const std::vector<Command>& commands, const std::string& name) {
  for (const auto& c : commands)
    if (c.spec.name == name) return &c;
  return nullptr;
}

}  // namespace trident::cli
