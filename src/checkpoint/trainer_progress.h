// What a trainer has done beyond counting its steps, which a resumed run needs in order to
// continue exactly: the data windows left out so far and the loss-spike guard's recent
// history. Saved in the index's "trainer" object.
#pragma once
#include <cstdint>
#include <map>
#include <nlohmann/json_fwd.hpp>  // nlohmann::json
#include <vector>

#include "config/data_windows.h"  // DataWindow

namespace trident {

/// One healthy step as the spike guard remembers it.
struct GuardSample {
  int64_t step = 0;
  double loss = 0.0;
  double grad_norm = 0.0;
};

struct TrainerProgress {
  std::vector<DataWindow> skipped_data;    // merged windows of batches left out
  std::vector<GuardSample> guard_history;  // oldest first
  int64_t guard_last_skip = 0;             // the newest skipped step (0: none)
  /// Saved while the guard saw no sign of divergence: a rollback may return to it.
  bool good = true;
  /// The sigmoid router's per-expert biases, by MoE layer index (empty otherwise): state
  /// the steps built up from the loads, not parameters, so they travel here.
  std::map<int64_t, std::vector<double>> router_bias;
};

/// Writes `progress` into a checkpoint index's trainer object.
void write_progress(const TrainerProgress& progress, nlohmann::json& trainer);
/// Reads it back; a checkpoint written before these keys reads as no windows, no history.
TrainerProgress read_progress(const nlohmann::json& trainer);

}  // namespace trident
