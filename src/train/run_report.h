// What rank 0 tells the user about a run: its outputs' locations, the per-rank memory of
// model states and activations, and the closing summary (loss against the floor,
// throughput, and where the time went), and what crossed nodes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "config/config.h"
#include "train/trace.h"

namespace trident {
class ParallelContext;
class Trainer;

/// Parameters of the whole model: shards summed over the model-parallel group, each
/// tp-replicated parameter and the tied head counted once. Collective.
int64_t count_parameters(Trainer& trainer, ParallelContext& ctx);

/// Per rank: parameter, gradient and optimizer-state bytes, and the peak activation bytes
/// measured so far; printed by rank 0. Collective.
void report_memory(Trainer& trainer, ParallelContext& ctx, int64_t peak_activation_bytes);

/// run.json in the run directory (rank 0; nothing without logging.run_dir): the layout,
/// the parameter count and the loss floor, for scripts/plot.py.
void write_run_info(const TrainConfig& config, int64_t parameters, std::optional<double> floor);

struct RunTotals {
  int64_t steps = 0;
  double final_loss = 0.0;
  double tokens = 0.0;
  double seconds = 0.0;  // summed step times
  int64_t evaluations = 0;
  double eval_seconds = 0.0;  // validation, not in `seconds`
  double val_loss = 0.0;      // the last evaluation's
};

/// The closing summary on rank 0 (collective: gathers every rank's time split).
void report_summary(const TrainConfig& config, const RunTotals& totals, std::optional<double> floor,
                    const TimeSplit& split, ParallelContext& ctx);

/// With ranks on several nodes: the bytes each node's ranks sent to other nodes, as the
/// communicators counted them (Communicator::cross_node_bytes), printed by rank 0 beside
/// the calls they could not count. `node_of_rank`: each world rank's node. Collective.
void report_cross_node(ParallelContext& ctx, const std::vector<std::string>& node_of_rank);

}  // namespace trident
