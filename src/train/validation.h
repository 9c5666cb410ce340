// Validation during training: the model's forward without gradients over a fixed set of
// windows (data::EvalSet), run through the same pipeline runtime, schedule order and groups
// as a training step, so that every layout gives the single process's validation loss.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "pipeline/schedule.h"  // pipeline::Schedule

namespace trident {

struct ValidationResult {
  double loss = 0.0;                   ///< mean over the counted tokens of every source
  std::vector<double> loss_by_source;  ///< the same per source of the eval set
  std::vector<int64_t> tokens_by_source;
  int64_t tokens = 0;    ///< counted target tokens (eod masking applies)
  double seconds = 0.0;  ///< wall time of the evaluation, kept out of tokens/s
};

/// `schedule` without its backward half: the forwards and activation transfers in the
/// training order (which the schedule checker proved to meet), then the step's end.
pipeline::Schedule forward_only(const pipeline::Schedule& schedule);

/// Where the eval set's sequences sit in the evaluation's global batches: each source's
/// sequences fill whole micro-batches of `micro_batch` slots (the rest padding), so that a
/// micro-batch's loss belongs to one source; the slots are then cut into global batches of
/// `global_batch` (the last padded too). Padding counts no token.
struct EvalSlots {
  std::vector<int64_t> sequence;  ///< per slot: the eval set's index, or -1 for padding
  std::vector<int> source;        ///< per slot: its source (padding: its micro-batch's)
  int64_t batches = 0;            ///< global batches of `global_batch` slots
};
EvalSlots lay_out_eval_slots(const std::vector<int>& source_of_sequence, int sources,
                             int64_t micro_batch, int64_t global_batch);

}  // namespace trident
