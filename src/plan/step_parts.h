// A step's time by part (docs/planner.md, "Step time"): the slowest stage's micro-batches,
// the pipeline's sends and bubble, the dp reductions, the optimizer's pass and the nvme
// tier's wait, which step_time (time_model.h) adds up.
#pragma once
#include <cstdint>  // int64_t
#include <vector>   // std::vector

#include "plan/cluster.h"          // Cluster
#include "plan/plan_model.h"       // PlanModel, Layout
#include "plan/shared_pipeline.h"  // StageWork
#include "plan/stage_time.h"       // MicroBatchTime
#include "plan/time_model.h"       // Link, TimeBreakdown

namespace trident::plan {

/// A stage's micro-batch as the pipeline simulation runs it: the tp, ep and cp waits with
/// the forward (what ZB-H1 and the shared-core simulation cannot hide); ZB-H1's weight
/// half the whole backward, its input half the rest of the compute beyond the forward.
StageWork stage_work(const PlanModel& m, const MicroBatchTime& t);

/// The pipeline's stages side by side.
struct StagePace {
  MicroBatchTime slow;          ///< the slowest stage's micro-batch, which sets the pace
  int64_t psi = 0;              ///< the largest stage's parameters on a rank, of which
  int64_t experts = 0;          ///< are routed experts'
  double mean_compute = 0;      ///< a micro-batch's compute averaged over the stages
  std::vector<StageWork> work;  ///< each stage's micro-batch, as stage_work
};
StagePace stage_pace(const PlanModel& m, const Layout& l, const Cluster& c);

/// The pipeline's sends: each micro-batch's activation forward and its gradient back (once
/// a chunk with interleaved 1F1B), and the tied embedding's gradient summed between the
/// first and the last stage. 0 for one stage.
double pipeline_sends_s(const PlanModel& m, const Layout& l, const Cluster& c, double mbs);

/// Seconds of the schedule run on the machine's cores (plan/shared_pipeline.h) from the
/// stages' `work` (interleaved 1F1B: each rank's chunks, computed here), without sends.
double pipeline_s(const PlanModel& m, const Layout& l, const Cluster& c,
                  const std::vector<StageWork>& work);

/// The pipeline's fill and drain: the simulated schedule beyond the step's compute and the
/// tp, ep and cp waits of `t` (charged apart); 0 for one stage.
double bubble_s(const PlanModel& m, const Layout& l, const Cluster& c, const StagePace& pace,
                const TimeBreakdown& t);

/// The exposed time of one gradient reduction of `seconds`, of which `last_bucket` seconds
/// can only start once backward ends; of the rest, the part that fits in `window` seconds
/// of backward could hide, and `overlap` of it does (calibrate's OverlapTiming::overlap).
double exposed(double seconds, double last_bucket, double window, double overlap);

/// A buffer whose gradients a group reduces: its elements, the group's ranks and link.
struct ReducedBuffer {
  double elements = 0;
  int ranks = 1;
  Link link;
};
/// The exposed gradient reductions and parameter gathers of `buffer` for a step of `mbs`
/// micro-batches under the layout's ZeRO stage, hiding behind `backward` seconds of each
/// micro-batch's backward.
double reductions_s(const PlanModel& m, const Layout& l, const Cluster& c,
                    const ReducedBuffer& buffer, double backward, double mbs);

/// The dp part's reductions: the dense buffer's over dp x cp, the routed experts' over
/// expert-dp.
double dp_reductions_s(const PlanModel& m, const Layout& l, const Cluster& c, const StagePace& pace,
                       double mbs);

/// One-element collectives every step: the gradient norm over the world and the loss summed
/// over dp (charged to dp), the loss broadcast over pp (charged to pp).
struct ScalarCollectives {
  double dp = 0, pp = 0;
};
ScalarCollectives scalar_collectives(const Layout& l, const Cluster& c);

/// The elements of the optimizer's shard on a rank: the dense buffer's over dp x cp, the
/// experts' over expert-dp.
double shard_elements(const Layout& l, const StagePace& pace);

/// ZeRO 2 and 3's copies each micro-batch: the gradients into bucket buffers and the reduced
/// shard added into the gradient shard, at memory_gbps; 0 below stage 2 or without it.
double zero2_copies_s(const PlanModel& m, const Layout& l, const Cluster& c, const StagePace& pace,
                      double mbs);

/// trident's AdamW over the rank's shard at memory_gbps (or its calibrated time per
/// element), with contention and shared cores; 0 without memory_gbps.
double optimizer_s(const PlanModel& m, const Layout& l, const Cluster& c, const StagePace& pace);

/// Muon's Newton-Schulz on the slowest stage, its FLOPs shared by the stage's ranks at the
/// matmul rate, and the exchange of its matrices (plan/muon_cost.h); 0 without Muon.
double muon_s(const PlanModel& m, const Layout& l, const Cluster& c);

/// What the nvme tier's traffic adds to step `t` beyond the AdamW step and the compute it
/// overlaps, on the stage that moves the most; 0 without a disk rate or the nvme tier.
double tier_s(const PlanModel& m, const Layout& l, const Cluster& c, const TimeBreakdown& t);

}  // namespace trident::plan
