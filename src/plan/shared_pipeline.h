// A pipeline's step as its schedule runs it: an event simulation of the GPipe, 1F1B,
// interleaved 1F1B or ZB-H1 schedule in which the ranks with work split the cores equally
// (processor sharing). With a core (or device) per rank it is the schedule on dedicated devices,
// stages of unequal work included: a stage idles in the fill and drain as long as the
// others' passes it waits on take. On shared cores the other stages use that time, but
// only as far as the schedule's dependencies let them run.
#pragma once
#include <cstdint>  // int64_t
#include <vector>   // std::vector

#include "config/choices.h"  // PipelineSchedule

namespace trident::plan {

/// One stage's work for one micro-batch, in seconds on a core of its own, and what each
/// pass then waits without computing (its tp collectives), which needs no core. ZB-H1
/// splits the backward into the input-gradient half (`input`, what the previous stage
/// waits for) and the weight half, which takes `backward` seconds (and its wait).
struct StageWork {
  double forward = 0, backward = 0;
  double forward_wait = 0, backward_wait = 0;
  double input = 0;
};

/// The schedule's shape and the machine it shares.
struct SharedPipeline {
  int64_t micro_batches = 1;
  /// Each stage runs the runtime's own compute order of it (pipeline/schedule.h).
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  /// Interleaved 1F1B: model chunks per rank; the work is then one entry per virtual
  /// stage, chunk * stages + stage (stages = entries / chunks).
  int chunks = 1;
  /// Ranks running each stage in step (dp x tp replicas), all competing for the cores.
  int copies = 1;
  double cores = 1;   ///< the cores every rank of the pipeline shares (stages x copies:
                      ///< a core each)
  double send_s = 0;  ///< delay of one activation or gradient between stages (no CPU)
};

/// Seconds from the first forward to the last backward. `stages` holds one entry per
/// stage (per virtual stage under interleaved 1F1B).
double shared_pipeline_s(const std::vector<StageWork>& stages, const SharedPipeline& p);

}  // namespace trident::plan
