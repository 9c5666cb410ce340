// From a validated TrainConfig to the data layer's options: the training source and the
// evaluation set, so that the trainer and `trident batch` open exactly the same data.
#pragma once

#include "config/config.h"      // TrainConfig
#include "data/eval_set.h"      // EvalSet, EvalSetOptions
#include "data/token_source.h"  // SourceOptions

namespace trident::data {

/// The training source's options: [data] (source or mix, order, valid_fraction,
/// markov_successors), model.vocab, model.seq_len, train.seed, train.global_batch_size.
SourceOptions source_options(const TrainConfig& config);

/// The evaluation set's options: source_options(config) and [eval].
EvalSetOptions eval_set_options(const TrainConfig& config);

/// open_eval_set(eval_set_options(config)): empty when eval.sequences = 0.
EvalSet open_eval_set(const TrainConfig& config);

}  // namespace trident::data
