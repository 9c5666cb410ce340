// Parsing of subcommand arguments against their declared options.
#include "cli/args.h"

#include <sstream>

namespace trident::cli {

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

Args parse_args(const CommandSpec& spec, const std::vector<std::string>& argv) {
  Args args;
  for (size_t i = 0; i < argv.size(); ++i) {
    const std::string& a = argv[i];
    if (a == "--help" || a == "-h") {
      args.help = true;
      continue;
    }
    if (a.rfind("--", 0) != 0 || a.size() == 2) {
      args.positional.push_back(a);
      continue;
    }
    std::string name = a.substr(2);
    std::string value;
    bool inline_value = false;
    if (auto eq = name.find('='); eq != std::string::npos && name.rfind("set", 0) != 0) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
      inline_value = true;
    }
    if (name == "set") {
      if (i + 1 >= argv.size()) throw UsageError("--set needs section.key=value");
      args.sets.push_back(argv[++i]);
      continue;
    }
    if (name.rfind("set=", 0) == 0) {
      args.sets.push_back(name.substr(4));
      continue;
    }
    const OptionSpec* opt = nullptr;
    for (const auto& o : spec.options)
      if (o.name == name) opt = &o;
    if (!opt) {
      std::ostringstream msg;
      msg << "unknown option --" << name << "; valid options:";
      for (const auto& o : spec.options) msg << " --" << o.name;
      msg << " --set --help";
      throw UsageError(msg.str());
    }
    if (opt->value_name.empty()) {
      args.options[name] = "1";
    } else if (inline_value) {
      args.options[name] = value;
    } else {
      if (i + 1 >= argv.size())
        throw UsageError("--" + name + " needs a value (" + opt->value_name + ")");
      args.options[name] = argv[++i];
    }
  }
  if (!args.help) {
    const int n = static_cast<int>(args.positional.size());
    if (n < spec.min_positional || n > spec.max_positional)
      throw UsageError("usage: " + spec.usage + "\n(see trident " + spec.name + " --help)");
  }
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
    line("--" + o.name + (o.value_name.empty() ? "" : " " + o.value_name), o.help);
  line("--set section.key=value", "override a config key (repeatable)");
  line("--help", "show this help");
  return out.str();
}

}  // namespace trident::cli
