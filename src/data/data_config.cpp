// Translating the config's [data] and [eval] sections into the data layer's options.
#include "data/data_config.h"

namespace trident::data {
namespace {

std::vector<MixEntry> entries_of(const std::vector<MixSourceConfig>& mix, const std::string& key) {
  std::vector<MixEntry> entries;
  for (size_t k = 0; k < mix.size(); ++k)
    entries.push_back(
        {mix[k].path, mix[k].weight, mix[k].name, key + "[" + std::to_string(k) + "]"});
  return entries;
}

}  // namespace

SourceOptions source_options(const TrainConfig& config) {
  SourceOptions o;
  o.source = config.data.mix.empty() ? config.data.source : "";
  o.vocab = config.model.vocab;
  o.seq_len = config.model.seq_len;
  o.seed = static_cast<uint64_t>(config.train.seed);
  o.markov_successors = config.data.markov_successors;
  o.mix = entries_of(config.data.mix, "data.mix");
  o.order = config.data.order;
  o.valid_fraction = config.data.valid_fraction;
  o.global_batch = config.train.global_batch_size;
  return o;
}

EvalSetOptions eval_set_options(const TrainConfig& config) {
  EvalSetOptions o;
  o.train = source_options(config);
  o.source = config.eval.mix.empty() ? config.eval.source : "";
  o.mix = entries_of(config.eval.mix, "eval.mix");
  o.sequences = config.eval.sequences;
  return o;
}

EvalSet open_eval_set(const TrainConfig& config) { return open_eval_set(eval_set_options(config)); }

}  // namespace trident::data
