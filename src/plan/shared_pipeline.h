// A pipeline whose ranks time-share CPU cores: an event simulation of the GPipe or 1F1B
// schedule in which the ranks with work split the cores equally (processor sharing). With
// dedicated devices a stage idles in the fill and drain; on shared cores the other
// stages use that time, but only as far as the schedule's dependencies let them run.
#pragma once
#include <cstdint>  // int64_t
#include <vector>   // std::vector

namespace trident::plan {

/// One stage's work for one micro-batch, in seconds on a core of its own, and what each
/// pass then waits without computing (its tp collectives), which needs no core.
struct StageWork {
  double forward = 0, backward = 0;
  double forward_wait = 0, backward_wait = 0;
};

/// The schedule's shape and the machine it shares.
struct SharedPipeline {
  int64_t micro_batches = 1;
  bool gpipe = false;  ///< every forward, then every backward; else 1F1B
  /// Ranks running each stage in step (dp x tp replicas), all competing for the cores.
  int copies = 1;
  double cores = 1;   ///< the cores every rank of the pipeline shares
  double send_s = 0;  ///< delay of one activation or gradient between stages (no CPU)
};

/// Seconds from the first forward to the last backward.
double shared_pipeline_s(const std::vector<StageWork>& stages, const SharedPipeline& p);

}  // namespace trident::plan
