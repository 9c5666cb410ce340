// One micro-batch on one pipeline stage, by part (docs/planner.md, "Step time"): its
// compute (matmuls, attention's rerun core, elementwise work, operator calls, weights), its
// tp collectives, the MoE layers' all-to-alls over ep and ring attention's transfers.
#pragma once
#include <cstdint>  // int64_t

#include "plan/cluster.h"     // Cluster
#include "plan/plan_model.h"  // PlanModel, Layout, StateBytes
#include "plan/time_model.h"  // Link

namespace trident::plan {

/// What the parts of one micro-batch on one (virtual) stage are computed from.
struct StageShape {
  PlanModel m;                ///< the model as this rank sees it (rank_tokens: seq_len / cp tokens)
  StateBytes b;               ///< bytes per element of each kind of state
  int stage = 0, stages = 1;  ///< this stage of `stages` (virtual stages when interleaved)
  bool first = false, last = false;
  int64_t first_layer = 0, stage_layers = 0;  ///< the model's layers the stage holds
  double tokens = 0;        ///< the micro-batch's tokens on this rank: m.seq_len x micro_batch
  double layers = 0;        ///< stage_layers, of which
  double moe = 0;           ///< have an MoE MLP
  double h = 0;             ///< hidden
  double sl = 0;            ///< this rank's part of the sequence, m.seq_len
  double cp = 1, ep = 1;    ///< the layout's, as numbers
  double ring_blocks = 1;   ///< ring attention's blocks a query meets: (cp + 1) / 2
  double kv_heads = 0;      ///< the heads whose keys and values the ring moves
  double expert_rows = 0;   ///< rows each routed expert multiplies: tokens k ep / E
  double expert_flops = 0;  ///< the routed experts' forward FLOPs on this tp rank
  double rate = 0;          ///< FLOP/s of the stage's largest matmul, (tokens x h) (h x 4h/tp)
  double expert_rate = 0;   ///< FLOP/s of an expert's matmul
  double contention = 1;    ///< how much the ranks computing at once slow each other
  double passes = 1;        ///< forwards a micro-batch: 2 with full recomputation
};

/// The shape of micro-batches on `stage` of `whole` under `l`: of the pipeline's stages,
/// or with `chunks` model chunks a rank (interleaved 1F1B) of its virtual stages, chunk *
/// pp + stage, each 1/chunks of a stage's layers.
StageShape stage_shape(const PlanModel& whole, const Layout& l, const Cluster& c, int stage,
                       int chunks = 1);

/// FLOPs and seconds of a forward's matmuls: the layers', the head's on the last stage,
/// ring attention's off-diagonal blocks, the routed experts' at their own rate.
struct MatmulTime {
  double flops = 0, seconds = 0;
};
MatmulTime forward_matmuls(const StageShape& s, const Layout& l);

/// A layer's activation bytes on average over the stage's dense and MoE layers.
double mean_layer_activation_bytes(const StageShape& s, const Layout& l);

/// Attention's core run again in backward without full recomputation (selective, or ring
/// attention's blocks): its two products' FLOPs and seconds, and, selective, the softmax
/// rebuilt over the core's activations (twice their bytes at `stream` bytes/s).
struct CoreRerun {
  double flops = 0, matmul_s = 0, elementwise_s = 0;
};
CoreRerun attention_core_rerun(const StageShape& s, const Layout& l, double layer_act,
                               double stream);

/// Ring attention's elementwise work at `stream` bytes/s: six passes over its blocks'
/// scores, the tensors each ring step streams (forward and backward), and the forward's
/// alone (what full recomputation runs again). Zero without cp or a stream rate.
struct RingElementwise {
  double scores_s = 0, steps_s = 0, forward_s = 0;
};
RingElementwise ring_elementwise(const StageShape& s, const Layout& l, double stream);

/// Elementwise work over the saved activations at `stream` bytes/s: six times their bytes,
/// the expert-parallel copies of each choice's row, and what recomputation adds (twice the
/// activations). Zero without a stream rate.
struct Elementwise {
  double activations_s = 0, expert_copies_s = 0, recompute_s = 0;
};
Elementwise elementwise(const StageShape& s, const Layout& l, double layer_act, double stream);

/// The fixed cost of the stage's operator calls: each layer's (more for MoE layers and
/// ring attention's blocks), and half of the model's ends' on the first and last stage.
double operator_calls_s(const StageShape& s, const Layout& l, const Cluster& c);

/// The stage's weights at Cluster::weight_gbps, whatever the tokens; 0 when not calibrated.
double weights_s(const PlanModel& whole, const StageShape& s, const Layout& l, const Cluster& c);

/// ZB-H1's input half of a stage's backward: its products with the weights (a forward's
/// matmuls) and two thirds of the rest of the pass (`base` seconds of forward and backward).
double zb_h1_input_half_s(double forward_matmul_s, double base);

/// A micro-batch's compute on one stage, each part above times the contention.
struct ComputeTime {
  double compute = 0;   ///< forward, backward and any recomputation
  double forward = 0;   ///< the forward's share of compute
  double backward = 0;  ///< the backward's share, without recomputation
  double flops = 0;     ///< with recomputation
};
ComputeTime micro_batch_compute(const PlanModel& whole, const StageShape& s, const Layout& l,
                                const Cluster& c);

/// The tp collectives of one pass, by kind, each over a whole (tokens x hidden) activation.
struct TpCounts {
  double all_reduce = 0, all_gather = 0, reduce_scatter = 0;
  TpCounts& operator+=(const TpCounts& o);
};

/// What trident's tp layers issue for one micro-batch over `layers` dense layers, the
/// embedding on the `first` stage and the head on the `last` (tensor_parallel/).
void tp_counts(const PlanModel& m, const Layout& l, bool first, bool last, double layers,
               TpCounts& forward, TpCounts& backward);

/// Seconds of the collectives `n` counts over tp ranks, each of `bytes`.
double tp_seconds(const TpCounts& n, double bytes, int tp, const Link& link);

/// Seconds of one pass's collectives in one layer, forward and backward.
struct PassSeconds {
  double forward = 0, backward = 0;
};
/// An MoE layer's tp collectives: the shared and local experts' all-reduces over their
/// rows, and attention's (with sequence parallelism, its gathers and reduce-scatters).
PassSeconds moe_layer_tp(const StageShape& s, const Layout& l, const Link& link);

/// The vocabulary-parallel cross-entropy's three all-reduces of a value a token.
double loss_tp_s(const StageShape& s, const Layout& l, const Link& link);

/// The tp ranks' compute drifting apart: Cluster::sync_fraction of `compute`, scaled from
/// the last of two ranks to the last of tp; 0 without it.
double tp_drift_s(const Cluster& c, int tp, double compute);

/// A micro-batch's tp collectives, and of them the forward's.
struct TpTime {
  double seconds = 0, forward = 0;
};
TpTime micro_batch_tp(const StageShape& s, const Layout& l, const Cluster& c,
                      const ComputeTime& compute);

/// Seconds and the bytes this rank sends of a part's transfers.
struct Traffic {
  double seconds = 0, bytes = 0;
};

/// The MoE layers' all-to-alls over ep: counts, then each choice's row to its expert and
/// the output back; backward both gradients back.
Traffic micro_batch_all_to_all(const StageShape& s, const Layout& l, const Cluster& c);

/// What the ep group waits in its all-to-alls for the rank whose experts got the most rows.
double expert_wait_s(const StageShape& s, const Layout& l);

/// Ring attention's transfers over cp not hidden behind its half blocks.
Traffic micro_batch_ring(const StageShape& s, const Layout& l, const Cluster& c);

/// One micro-batch on one stage: its compute and the waits in its collectives.
struct MicroBatchTime {
  double compute = 0;     ///< forward, backward and any recomputation
  double forward = 0;     ///< the forward's share of compute
  double backward = 0;    ///< the backward's share, without recomputation
  double tp = 0;          ///< tp collectives of the whole micro-batch
  double tp_forward = 0;  ///< of which the forward's
  double ep = 0;          ///< the MoE layers' all-to-alls over ep
  double ep_bytes = 0;    ///< what this rank sends in them (to the other ep ranks)
  double cp = 0;          ///< ring attention's transfers not hidden behind its blocks
  double cp_bytes = 0;    ///< what this rank sends around the ring
  double flops = 0;
};
MicroBatchTime micro_batch_time(const PlanModel& whole, const Layout& l, const Cluster& c,
                                int stage, int chunks = 1);

}  // namespace trident::plan
