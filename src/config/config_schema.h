// The config schema as data: one row per key (section, key, type, default, allowed
// values, meaning, field accessor). Parsing, validation, to_toml and the markdown
// reference are all generated from this table. Internal to src/config.
#pragma once

#include <functional>  // std::function for field accessors
#include <optional>
#include <string>
#include <variant>  // ConfigValue
#include <vector>

#include "config/config.h"

namespace trident::config_detail {

enum class ValueType { kInt, kFloat, kString, kBool };

/// A key's value, whatever its type.
using ConfigValue = std::variant<int64_t, double, std::string, bool>;

/// "integer", "float", "string", "boolean": as messages and docs name the types.
const char* type_name(ValueType type);

/// Reads and writes one field of a TrainConfig.
struct FieldRef {
  ValueType type;
  std::function<ConfigValue(const TrainConfig&)> get;
  std::function<void(TrainConfig&, const ConfigValue&)> set;
};

/// A value users may expect a key to take (from DeepSpeed, say) that it refuses, and why.
struct Refusal {
  ConfigValue value;
  const char* why;  ///< the reason and what to use instead
};

/// What values a key accepts: numeric bounds and/or a list of choices.
struct Allowed {
  std::optional<double> lo, hi;  ///< bounds, inclusive unless *_open
  bool lo_open = false, hi_open = false;
  std::vector<ConfigValue> choices;   ///< when not empty: the only valid values
  std::vector<Refusal> refused = {};  ///< values outside the choices that get a reason

  /// The reason `v` is refused, or nullptr when it has none of its own.
  const char* refusal(const ConfigValue& v) const;

  bool accepts(const ConfigValue& v) const;
  /// ">= 1", "> 0", "in [0, 1)", "one of \"gpipe\", \"1f1b\"", or "" if anything goes.
  std::string describe() const;
};

/// When a key has an effect: only while another key holds one value (the llama keys
/// with model.arch = "llama", the zero3_* keys with parallel.zero_stage = 3), or any
/// other (the token-file keys unless data.source = "synthetic"). A key set
/// where it has no effect is an error, so a config never says more than the run does.
struct AppliesWhen {
  const char* key = nullptr;  ///< "section.key" of the deciding key; nullptr: always applies
  ConfigValue value;          ///< the value it must hold
  bool unless = false;        ///< true: applies while the deciding key does NOT hold value
};

/// One row of the schema.
struct KeySpec {
  const char* section;
  const char* key;
  FieldRef field;
  Allowed allowed;
  const char* meaning;
  AppliesWhen applies_when = {};

  std::string full_name() const { return std::string(section) + "." + key; }
};

/// One key of a [[data.mix]] or [[eval.mix]] table (a file of a mixture).
struct MixKeySpec {
  const char* key;
  ValueType type;
  std::function<ConfigValue(const MixSourceConfig&)> get;
  std::function<void(MixSourceConfig&, const ConfigValue&)> set;
  Allowed allowed;
  const char* meaning;
  bool required = false;  ///< every table must give it
};

/// The keys of a mixture's tables, in the order they are printed.
const std::vector<MixKeySpec>& mix_schema();
/// The row for a mixture table's `key`, or nullptr.
const MixKeySpec* find_mix_key(const std::string& key);
/// Whether `section` takes [[section.mix]] tables ("data" and "eval").
bool has_mix(const std::string& section);
/// The list of [[section.mix]] tables of `c` (section: "data" or "eval").
std::vector<MixSourceConfig>& mix_of(TrainConfig& c, const std::string& section);
const std::vector<MixSourceConfig>& mix_of(const TrainConfig& c, const std::string& section);

/// The schema, in the order the sections and keys are printed.
const std::vector<KeySpec>& config_schema();
/// Section names, in schema order.
const std::vector<std::string>& config_sections();
/// The row for section.key, or nullptr.
const KeySpec* find_key(const std::string& section, const std::string& key);
/// Whether `spec` has an effect in `c` (see AppliesWhen).
bool applies(const KeySpec& spec, const TrainConfig& c);

/// A value as TOML writes it: 4, 0.001, 1e-08, "fp32" (floats round-trip exactly).
std::string format_value(const ConfigValue& v);

/// The candidate nearest to `word` by edit distance, or "" if none is close enough.
std::string nearest(const std::string& word, const std::vector<std::string>& candidates);

}  // namespace trident::config_detail
