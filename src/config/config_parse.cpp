// Reading a config: TOML text and --set overrides into a TrainConfig, each value
// type-checked against the schema and remembered with its file line for messages.
#include <toml++/toml.h>  // toml::parse, nodes with source positions

#include <algorithm>  // std::count
#include <cerrno>
#include <cstdio>      // std::snprintf
#include <cstring>     // std::strerror
#include <filesystem>  // telling a missing file from a directory
#include <fstream>
#include <optional>
#include <sstream>
#include <stdexcept>  // std::invalid_argument

#include "config/config.h"
#include "config/config_schema.h"
#include "config/config_validate.h"
#include "config/toml_guard.h"  // find_unreadable_char

namespace trident {
namespace config_detail {
namespace {

/// A node as a message describes it: string "four", float 4.5, an array.
std::string describe_node(const toml::node& node) {
  if (const auto* s = node.as_string()) return "string " + format_value(s->get());
  if (const auto* i = node.as_integer()) return "integer " + std::to_string(i->get());
  if (const auto* f = node.as_floating_point()) return "float " + format_value(f->get());
  if (const auto* b = node.as_boolean())
    return std::string("boolean ") + (b->get() ? "true" : "false");
  if (node.is_array()) return "an array";
  if (node.is_table()) return "a table";
  return "a date/time";
}

/// The node's value as `type`, or nothing when the types do not fit. An integer is a
/// fine float; nothing else converts.
std::optional<ConfigValue> convert(const toml::node& node, ValueType type) {
  switch (type) {
    case ValueType::kInt:
      if (const auto* i = node.as_integer()) return ConfigValue(i->get());
      break;
    case ValueType::kFloat:
      if (const auto* f = node.as_floating_point()) return ConfigValue(f->get());
      if (const auto* i = node.as_integer()) return ConfigValue(static_cast<double>(i->get()));
      break;
    case ValueType::kString:
      if (const auto* s = node.as_string()) return ConfigValue(s->get());
      break;
    case ValueType::kBool:
      if (const auto* b = node.as_boolean()) return ConfigValue(b->get());
      break;
  }
  return std::nullopt;
}

std::string join(const std::vector<std::string>& items, const char* separator) {
  std::string text;
  for (size_t i = 0; i < items.size(); ++i) text += (i ? separator : "") + items[i];
  return text;
}

/// "; did you mean 'optimizer.lr'?" or "; valid keys in [model]: arch, layers, ...".
std::string suggest_key(const std::string& section, const std::string& key) {
  std::vector<std::string> same_key_elsewhere, keys_in_section;
  for (const KeySpec& spec : config_schema()) {
    if (key == spec.key) same_key_elsewhere.push_back(spec.full_name());
    if (section == spec.section) keys_in_section.emplace_back(spec.key);
  }
  if (!same_key_elsewhere.empty()) return "; did you mean '" + same_key_elsewhere.front() + "'?";
  if (keys_in_section.empty()) {  // a key outside any section: look everywhere
    std::vector<std::string> all;
    for (const KeySpec& spec : config_schema()) all.push_back(spec.full_name());
    const std::string near = nearest(key, all);
    return near.empty() ? "; keys belong in a section: " + join(config_sections(), ", ")
                        : "; did you mean '" + near + "'?";
  }
  const std::string near = nearest(key, keys_in_section);
  if (!near.empty()) return "; did you mean '" + section + "." + near + "'?";
  return "; valid keys in [" + section + "]: " + join(keys_in_section, ", ");
}

std::string suggest_section(const std::string& section) {
  const std::string near = nearest(section, config_sections());
  if (!near.empty()) return "; did you mean '[" + near + "]'?";
  return "; valid sections: " + join(config_sections(), ", ");
}

/// Collects values into a TrainConfig, remembering where each came from.
class Reader {
 public:
  Reader(const std::string& source, bool resolved) : origins_(source), resolved_(resolved) {
    config_.source = source;
  }

  void read_file_table(const toml::table& root) {
    for (const auto& [name, node] : root) {
      const std::string section(name.str());
      const int line = line_of(name, node);
      const toml::table* table = node.as_table();
      if (table == nullptr && is_section(section)) {
        errors_.push_back(at(line) + "'" + section + "' must be a table ([" + section + "]), got " +
                          describe_node(node));
      } else if (table == nullptr) {
        errors_.push_back(at(line) + "unknown key '" + section + "'" + suggest_key("", section));
      } else if (!is_section(section)) {
        errors_.push_back(at(line) + "unknown section '[" + section + "]'" +
                          suggest_section(section));
      } else {
        for (const auto& [key, value] : *table) {
          const int key_line = line_of(key, value);
          const std::string full = section + "." + std::string(key.str());
          if (key.str() == "mix" && has_mix(section)) {
            read_mix(section, value, [&](const toml::node& item) {
              return at(static_cast<int>(item.source().begin.line));
            });
            origins_.set_file_line(full, key_line, !resolved_);
          } else if (assign(section, std::string(key.str()), value, at(key_line))) {
            origins_.set_file_line(full, key_line, !resolved_);
          }
        }
      }
    }
  }

  void read_override(const std::string& text) {
    const std::string where = "--set " + text + ": ";
    const size_t eq = text.find('=');
    const size_t dot = text.find('.');
    if (eq == std::string::npos || dot == std::string::npos || dot > eq) {
      errors_.push_back("--set '" + text +
                        "': expected section.key=value, e.g. --set model.layers=4");
      return;
    }
    const std::string section = trim(text.substr(0, dot));
    const std::string key = trim(text.substr(dot + 1, eq - dot - 1));
    const std::string raw = trim(text.substr(eq + 1));
    if (!is_section(section)) {
      errors_.push_back(where + "unknown section '[" + section + "]'" + suggest_section(section));
      return;
    }
    // The value is read as TOML (4, 1e-3, "text"); anything else is a bare string.
    toml::table parsed;
    try {
      if (find_unreadable_char(raw)) throw std::invalid_argument("not TOML");
      parsed = toml::parse("v = " + raw, std::string_view("--set"));
    } catch (const std::exception&) {
      parsed = toml::table{};
      parsed.insert("v", raw);
    }
    if (key == "mix" && has_mix(section)) {
      read_mix(
          section, *parsed.get("v"), [&](const toml::node&) { return where; }, &text);
      origins_.set_override(section + ".mix", text);
      return;
    }
    const KeySpec* spec = find_key(section, key);
    if (spec && spec->field.type == ValueType::kString && !parsed["v"].is_string())
      parsed.insert_or_assign("v", raw);  // --set data.source=2024 means the text 2024
    if (assign(section, key, *parsed.get("v"), where))
      origins_.set_override(section + "." + key, text);
  }

  TrainConfig finish(int world_size) {
    if (errors_.empty()) errors_ = validate_config(config_, origins_, world_size);
    if (!errors_.empty()) throw ConfigError(join(errors_, "\n"));
    return config_;
  }

 private:
  /// Stores `node` in section.key; records an error and returns false when it cannot.
  bool assign(const std::string& section, const std::string& key, const toml::node& node,
              const std::string& where) {
    const std::string full = section + "." + key;
    const KeySpec* spec = find_key(section, key);
    if (spec == nullptr) {
      errors_.push_back(where + "unknown key '" + full + "'" + suggest_key(section, key));
      return false;
    }
    const std::optional<ConfigValue> value = convert(node, spec->field.type);
    if (!value) {
      const char* article = spec->field.type == ValueType::kInt ? "an " : "a ";
      const char* also = spec->field.type == ValueType::kFloat ? " (or an integer)" : "";
      errors_.push_back(where + full + " must be " + article + type_name(spec->field.type) + also +
                        ", got " + describe_node(node));
      return false;
    }
    // A choice is stored as an enum, which cannot hold a name outside the choices: check
    // it here, as validation checks every other value once all are read.
    if (!spec->allowed.choices.empty() && !spec->allowed.accepts(*value)) {
      const char* why = spec->allowed.refusal(*value);
      errors_.push_back(where + full + " = " + format_value(*value) + " is not valid; it must be " +
                        spec->allowed.describe() + (why ? std::string("; ") + why : ""));
      return false;
    }
    spec->field.set(config_, *value);
    return true;
  }

  /// Reads [[section.mix]] tables (or an inline array of tables from --set) into the
  /// config, each key checked against the mixture schema; `where(item)` locates an item.
  /// `override_text`: the --set it came from, or nullptr for the file.
  template <typename Where>
  void read_mix(const std::string& section, const toml::node& node, Where&& where,
                const std::string* override_text = nullptr) {
    const std::string full = section + ".mix";
    const toml::array* array = node.as_array();
    if (array == nullptr) {
      errors_.push_back(where(node) + full + " must be an array of tables ([[" + full +
                        "]] tables, or [{path = \"...\", weight = 1.0}, ...]), got " +
                        describe_node(node));
      return;
    }
    std::vector<MixSourceConfig> list;
    for (size_t i = 0; i < array->size(); ++i) {
      const toml::node& element = *array->get(i);
      const std::string item = full + "[" + std::to_string(i) + "]";
      const toml::table* table = element.as_table();
      if (table == nullptr) {
        errors_.push_back(where(element) + item +
                          " must be a table with path, weight and name, "
                          "got " +
                          describe_node(element));
        continue;
      }
      MixSourceConfig source;
      for (const auto& [key_name, value] : *table) {
        const std::string key(key_name.str());
        const MixKeySpec* spec = find_mix_key(key);
        if (spec == nullptr) {
          std::vector<std::string> keys;
          for (const MixKeySpec& k : mix_schema()) keys.emplace_back(k.key);
          const std::string near = nearest(key, keys);
          errors_.push_back(where(element) + "unknown key '" + item + "." + key + "'" +
                            (near.empty() ? "; keys of [[" + full + "]]: " + join(keys, ", ")
                                          : "; did you mean '" + near + "'?"));
          continue;
        }
        const std::optional<ConfigValue> converted = convert(value, spec->type);
        if (!converted) {
          errors_.push_back(where(element) + item + "." + key + " must be a " +
                            type_name(spec->type) + ", got " + describe_node(value));
          continue;
        }
        spec->set(source, *converted);
      }
      for (const MixKeySpec& spec : mix_schema())
        if (spec.required && !table->contains(spec.key))
          errors_.push_back(where(element) + item + " has no " + spec.key + "; every [[" + full +
                            "]] table needs " + spec.key + " = ...");
      if (override_text != nullptr)
        origins_.set_override(item, *override_text);
      else
        origins_.set_file_line(item, static_cast<int>(element.source().begin.line), false);
      list.push_back(source);
    }
    mix_of(config_, section) = list;
  }

  static bool is_section(const std::string& name) {
    for (const std::string& section : config_sections())
      if (section == name) return true;
    return false;
  }

  static int line_of(const toml::key& key, const toml::node& node) {
    if (key.source().begin.line > 0) return static_cast<int>(key.source().begin.line);
    return static_cast<int>(node.source().begin.line);
  }

  std::string at(int line) const {
    return origins_.source() + (line > 0 ? ":" + std::to_string(line) : "") + ": ";
  }

  static std::string trim(const std::string& s) {
    const size_t begin = s.find_first_not_of(" \t");
    if (begin == std::string::npos) return "";
    return s.substr(begin, s.find_last_not_of(" \t") - begin + 1);
  }

  TrainConfig config_;
  Origins origins_;
  bool resolved_;
  std::vector<std::string> errors_;
};

}  // namespace
}  // namespace config_detail

namespace {

TrainConfig parse(const std::string& toml_text, const std::string& source_name,
                  const std::vector<std::string>& overrides, int world_size, bool resolved) {
  if (const auto bad = config_detail::find_unreadable_char(toml_text)) {
    const std::string before = toml_text.substr(0, bad->offset);
    const size_t line = 1 + static_cast<size_t>(std::count(before.begin(), before.end(), '\n'));
    const size_t column =
        bad->offset - (before.rfind('\n') == std::string::npos ? 0 : before.rfind('\n') + 1) + 1;
    char code[16];
    std::snprintf(code, sizeof code, "U+%04X", static_cast<unsigned>(bad->code_point));
    throw ConfigError(source_name + ":" + std::to_string(line) + ":" + std::to_string(column) +
                      ": TOML syntax error: the character " + code +
                      " may appear only inside a string or a comment; remove it");
  }
  toml::table root;
  try {
    root = toml::parse(toml_text, std::string_view(source_name));
  } catch (const toml::parse_error& e) {
    const auto& begin = e.source().begin;
    throw ConfigError(source_name + ":" + std::to_string(begin.line) + ":" +
                      std::to_string(begin.column) +
                      ": TOML syntax error: " + std::string(e.description()));
  }
  config_detail::Reader reader(source_name, resolved);
  reader.read_file_table(root);
  for (const std::string& text : overrides) reader.read_override(text);
  return reader.finish(world_size);
}

}  // namespace

TrainConfig parse_config(const std::string& toml_text, const std::string& source_name,
                         const std::vector<std::string>& overrides, int world_size) {
  return parse(toml_text, source_name, overrides, world_size, /*resolved=*/false);
}

TrainConfig parse_resolved_config(const std::string& toml_text, const std::string& source_name,
                                  const std::vector<std::string>& overrides, int world_size) {
  return parse(toml_text, source_name, overrides, world_size, /*resolved=*/true);
}

TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides,
                        int world_size) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec))
    throw ConfigError(path + ": cannot read the config file: it is a directory");
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError(path + ": cannot open the config file: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return parse_config(text.str(), path, overrides, world_size);
}

}  // namespace trident
