// Evaluation of a model on a token file, in any layout: the mean next-token cross-entropy
// over the file's first K windows of T+1 tokens, run through the pipeline stages.
#pragma once
#include <cstdint>  // int64_t
#include <string>   // std::string

#include "models/model_stage.h"  // ModelStage

namespace trident {
class ParallelContext;
}

namespace trident {

struct EvalResult {
  double loss = 0.0;   // mean over the tokens
  int64_t tokens = 0;  // K * T
};

/// Window i is tokens [i*T, i*T + T] of `data_path`: the first T are inputs, the last T
/// targets. dp rank d takes windows d, d + dp, ...; each pipeline runs them in
/// micro-batches of up to `micro_batch` windows. Collective over ctx's world; every rank
/// returns the same result. Throws (on every rank alike) when the file is too short or
/// holds a token outside the vocabulary.
EvalResult evaluate_token_file(ModelStage& model, ParallelContext& ctx,
                               const std::string& data_path, int64_t sequences, int64_t seq_len,
                               int64_t micro_batch = 4);

}  // namespace trident
