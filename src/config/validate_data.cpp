// The data and evaluation cross-checks: one file or a mixture (never both), the mixtures'
// weights and names, held-out data for the evaluation, and evaluation files apart from
// the training files.
#include <cmath>       // std::isfinite
#include <filesystem>  // std::filesystem::path::stem

#include "config/config_schema.h"
#include "config/config_validate.h"

namespace trident::config_detail {
namespace {

/// Checks a [[section.mix]] list against the mixture schema and fills in default names.
void check_mix(std::vector<MixSourceConfig>& mix, const std::string& section,
               const Origins& origins, Errors& errors) {
  const std::string full = section + ".mix";
  double sum = 0;
  for (size_t i = 0; i < mix.size(); ++i) {
    MixSourceConfig& m = mix[i];
    const std::string item = full + "[" + std::to_string(i) + "]";
    for (const MixKeySpec& spec : mix_schema()) {
      const ConfigValue value = spec.get(m);
      if (!spec.allowed.accepts(value))
        errors.push_back(origins.where(item) + ": " + item + "." + spec.key + " = " +
                         format_value(value) + " is not valid; it must be " +
                         spec.allowed.describe());
    }
    if (m.path.empty())
      errors.push_back(origins.where(item) + ": " + item + ".path is empty; give the token file");
    if (std::isfinite(m.weight) && m.weight > 0) sum += m.weight;
    if (m.name.empty()) m.name = std::filesystem::path(m.path).stem().string();
    for (size_t before = 0; before < i; ++before)
      if (mix[before].name == m.name)
        errors.push_back(origins.where(item) + ": " + item + " and " + full + "[" +
                         std::to_string(before) + "] are both named \"" + m.name +
                         "\"; give each its own name = \"...\"");
  }
  if (!mix.empty() && !(sum > 0))
    errors.push_back(origins.where(full) + ": the weights of " + full +
                     " sum to 0; give at least one file a positive weight");
}

/// One file or a mixture: giving both is ambiguous.
void check_one_kind(std::string& source, const std::vector<MixSourceConfig>& mix,
                    const std::string& section, const Origins& origins, Errors& errors) {
  if (mix.empty()) return;
  if (origins.chosen(section + ".source"))
    errors.push_back(origins.where(section + ".source") + ": " + section + ".source and [[" +
                     section + ".mix]] are both given; list every file in [[" + section +
                     ".mix]] (one table for a single file) and remove " + section + ".source");
  source.clear();
}

}  // namespace

void check_data_sources(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  check_mix(c.data.mix, "data", origins, errors);
  check_mix(c.eval.mix, "eval", origins, errors);
  check_one_kind(c.data.source, c.data.mix, "data", origins, errors);
  check_one_kind(c.eval.source, c.eval.mix, "eval", origins, errors);
  if (c.eval.source == "synthetic")
    errors.push_back(origins.where("eval.source") +
                     ": eval.source takes a token file; leave it empty to evaluate a synthetic "
                     "run on draws of its chain that no step trains on");
  for (const MixSourceConfig& m : c.data.mix)
    if (!c.eval.source.empty() && m.path == c.eval.source)
      errors.push_back(origins.where("eval.source") + ": eval.source = \"" + c.eval.source +
                       "\" is also a training file of [[data.mix]]; leave eval.source empty and "
                       "set data.valid_fraction to hold out the last windows of each file");
  if (!c.eval.source.empty() && c.eval.source == c.data.source)
    errors.push_back(origins.where("eval.source") + ": eval.source = \"" + c.eval.source +
                     "\" is data.source, so the evaluation would measure windows the run "
                     "trains on; leave eval.source empty and set data.valid_fraction (e.g. "
                     "0.01) to hold out its last windows");
}

void check_eval(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  const EvalConfig& e = c.eval;
  const std::string off = "eval.sequences = 0 turns evaluation off; set eval.sequences (e.g. 64)";
  if (!e.enabled()) {
    if (e.every > 0)
      errors.push_back(origins.where("eval.every") + ": eval.every = " + std::to_string(e.every) +
                       " evaluates every " + std::to_string(e.every) + " steps, but " + off);
    if (e.sample_tokens > 0)
      errors.push_back(origins.where("eval.sample_tokens") +
                       ": eval.sample_tokens = " + std::to_string(e.sample_tokens) +
                       " writes a sample at each evaluation, but " + off);
    return;
  }
  const bool synthetic = c.data.mix.empty() && c.data.source == "synthetic";
  const bool own_files = !e.source.empty() || !e.mix.empty();
  if (!synthetic && !own_files && c.data.valid_fraction == 0)
    errors.push_back(origins.where("eval.sequences") +
                     ": eval.sequences = " + std::to_string(e.sequences) +
                     " evaluates on the training files' held-out windows, but "
                     "data.valid_fraction = 0 holds none out; set data.valid_fraction (e.g. "
                     "0.01), or eval.source to a file the run does not train on");
  if (e.sample_tokens > 0) {
    // A sample is generated as `trident generate` does: each tp group holds the whole model,
    // and the prompt and the text are one token per byte.
    const auto& p = c.parallel;
    const std::string where = origins.where("eval.sample_tokens") +
                              ": eval.sample_tokens = " + std::to_string(e.sample_tokens) +
                              " writes a sample at each evaluation";
    if (e.sample_prompt.empty())
      errors.push_back(where + ", but eval.sample_prompt is empty; give the text to continue");
    if (p.pp != 1 || p.cp != 1 || p.ep != 1 || p.sequence_parallel || p.zero_stage == 3)
      errors.push_back(where +
                       ", which needs the whole model on each tp group: parallel.pp, cp "
                       "and ep = 1, no sequence_parallel and zero_stage below 3; set "
                       "eval.sample_tokens = 0 and run trident generate on a checkpoint");
    if (c.model.vocab > 256)
      errors.push_back(
          where + " with one token per byte, but model.vocab = " + std::to_string(c.model.vocab) +
          " is a larger vocabulary; set eval.sample_tokens = 0 and run trident "
          "generate with the model's tokenizer on a checkpoint");
    if (static_cast<int64_t>(e.sample_prompt.size()) + e.sample_tokens > c.model.seq_len)
      errors.push_back(where + ", but the prompt's " + std::to_string(e.sample_prompt.size()) +
                       " bytes and the sample's tokens exceed model.seq_len = " +
                       std::to_string(c.model.seq_len) + "; ask for fewer tokens");
  }
}

}  // namespace trident::config_detail
