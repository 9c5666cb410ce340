// Printing from the schema: a resolved config as TOML, and the markdown reference of
// every key that docs/config.md holds.
#include "config/config.h"
#include "config/config_schema.h"

namespace trident {

using config_detail::config_schema;
using config_detail::format_value;
using config_detail::KeySpec;
using config_detail::type_name;

namespace {

/// The [[section.mix]] tables of `c`, when it has any.
std::string mix_tables(const TrainConfig& c, const std::string& section) {
  std::string out;
  for (const MixSourceConfig& m : config_detail::mix_of(c, section)) {
    out += "\n[[" + section + ".mix]]\n";
    for (const config_detail::MixKeySpec& spec : config_detail::mix_schema())
      out += std::string(spec.key) + " = " + format_value(spec.get(m)) + "\n";
  }
  return out;
}

/// A mixture replaces its section's `source`: printing both would be refused on reading.
bool replaced_by_mix(const KeySpec& spec, const TrainConfig& c) {
  return std::string(spec.key) == "source" && config_detail::has_mix(spec.section) &&
         !config_detail::mix_of(c, spec.section).empty();
}

}  // namespace

std::string to_toml(const TrainConfig& c) {
  std::string out = "# trident config, resolved: every key that applies, defaults filled in\n";
  std::string section;
  for (const KeySpec& spec : config_schema()) {
    if (!config_detail::applies(spec, c)) continue;  // parse_config would refuse it
    if (replaced_by_mix(spec, c)) continue;
    if (section != spec.section) {
      if (config_detail::has_mix(section)) out += mix_tables(c, section);
      section = spec.section;
      out += "\n[" + section + "]\n";
    }
    out += std::string(spec.key) + " = " + format_value(spec.field.get(c)) + "\n";
  }
  if (config_detail::has_mix(section)) out += mix_tables(c, section);
  return out;
}

namespace {

constexpr const char* kIntro = R"(# Configuration reference

<!-- Generated from the schema table in src/config/config_schema.cpp by
config_reference_markdown(); test_config fails when this file differs from it.
Regenerate: TRIDENT_UPDATE_DOCS=1 build/tests/test_config --gtest_filter='ConfigDocs.*' -->

A run is described by one TOML file with the sections below; any key may be left out
and then takes its default. `--set section.key=value` overrides a key from the command
line (the value is read as TOML: `4`, `1e-3`, `"text"`; a bare word is a string), e.g.
`trident train configs/tiny.toml --set parallel.tp=2 --set train.precision=fp64`.

The whole config is checked before anything runs. A message names the key, the file and
line (or the `--set` it came from) and what would be valid; an unknown key gets the
nearest valid name suggested. Besides each key's own range, these must hold:

- `model.hidden` is divisible by `model.heads`, `model.heads` by `parallel.tp`, and
  `model.layers` by `parallel.pp`;
- `parallel.dp * parallel.cp * parallel.pp * parallel.tp` equals the number of ranks;
  `dp = 0` (the default) derives dp as ranks / (cp * pp * tp);
- with `parallel.cp > 1`, `model.seq_len` is divisible by `2 * cp` (and by `cp * tp`
  with sequence parallelism);
- `train.global_batch_size` is divisible by `train.micro_batch_size * parallel.dp`
  (each dp rank runs global / (micro * dp) micro-batches per step);
- `optimizer.min_lr <= optimizer.lr` and `train.stop_at <= train.steps`;
- a key that has no effect for the chosen model or ZeRO stage is an error when set: the
  keys marked "llama:" need `model.arch = "llama"`, those marked "ZeRO 3:" need
  `parallel.zero_stage = 3`;
- `data.source` and `[[data.mix]]` are not both given (nor `eval.source` and
  `[[eval.mix]]`); a mixture's weights sum to more than 0 and its names are unique;
  `data.valid_fraction` and `data.order` need token files;
- `eval.every` and `eval.sample_tokens` need `eval.sequences > 0`; evaluating without
  `eval.source` needs `data.valid_fraction > 0` for token files, and `eval.source` is not
  a training file.

The embedding is padded to `model.vocab` rounded up to a multiple of
lcm(`model.vocab_multiple`, `parallel.tp`).
)";

std::string default_text(const KeySpec& spec) {
  if (std::string(spec.section) == "parallel" && std::string(spec.key) == "dp")
    return "`0` (derived)";
  if (std::string(spec.section) == "eval" && std::string(spec.key) == "micro_batch")
    return "`0` (train.micro_batch_size)";
  return "`" + format_value(spec.field.get(TrainConfig{})) + "`";
}

/// The reference table of a mixture's [[section.mix]] keys.
std::string mix_reference(const std::string& section) {
  std::string out = "\n### [[" + section + ".mix]]\n\n";
  out += section == "data"
             ? "Each table is one token file of a training mixture, in place of data.source.\n"
             : "Each table is one token file of the evaluation set, in place of eval.source.\n";
  out += "\n| key | type | default | allowed | meaning |\n|---|---|---|---|---|\n";
  for (const config_detail::MixKeySpec& spec : config_detail::mix_schema()) {
    const std::string allowed = spec.allowed.describe();
    out += "| `" + std::string(spec.key) + "` | " + type_name(spec.type) + " | " +
           (spec.required ? std::string("required") : "`" + format_value(spec.get({})) + "`") +
           " | " + (allowed.empty() ? "any" : allowed) + " | " + spec.meaning + " |\n";
  }
  return out;
}

}  // namespace

std::string config_reference_markdown() {
  std::string out = kIntro;
  std::string section;
  for (const KeySpec& spec : config_schema()) {
    if (section != spec.section) {
      if (config_detail::has_mix(section)) out += mix_reference(section);
      section = spec.section;
      out += "\n## [" + section + "]\n\n";
      out += "| key | type | default | allowed | meaning |\n";
      out += "|---|---|---|---|---|\n";
    }
    const std::string allowed = spec.allowed.describe();
    out += "| `" + std::string(spec.key) + "` | " + type_name(spec.field.type) + " | " +
           default_text(spec) + " | " + (allowed.empty() ? "any" : allowed) + " | " + spec.meaning +
           " |\n";
  }
  if (config_detail::has_mix(section)) out += mix_reference(section);
  return out;
}

}  // namespace trident
