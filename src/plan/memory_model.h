// Memory per device of a layout: model states by the ZeRO paper's formulas, activations
// by Korthikanti et al. 2022, and the buffers communication needs, for the pipeline
// stage that holds the most.
#pragma once
#include <cstdint>  // int64_t
#include <string>   // std::string

#include "plan/plan_model.h"  // PlanModel, Layout, StateBytes

namespace trident::plan {

/// Bytes of model state on one device.
struct ModelStates {
  double parameters = 0, gradients = 0, optimizer_states = 0;
  double total() const { return parameters + gradients + optimizer_states; }
};

/// Model states of a device that holds `psi` parameters, sharded over `dp` ranks by ZeRO
/// `stage` (Rajbhandari et al. 2020, figure 1), with b = bytes per element:
///   stage 0: (b.param + b.grad + K) psi
///   stage 1: (b.param + b.grad) psi + K psi / dp
///   stage 2: b.param psi + (b.grad_shard + K) psi / dp
///   stage 3: (b.param + b.grad_shard + K) psi / dp
ModelStates zero_model_states(double psi, int dp, int stage, const StateBytes& b);

/// The activation shape of one micro-batch through one layer.
struct ActivationShape {
  int64_t seq_len = 0;      ///< s
  int64_t micro_batch = 0;  ///< b
  int64_t hidden = 0;       ///< h
  int64_t heads = 0;        ///< a
  /// A Llama layer (RMSNorm, SwiGLU MLP of ffn_hidden, no dropout) instead of the GPT's.
  bool llama = false;
  int64_t ffn_hidden = 0;  ///< f, the SwiGLU width (0: 4 h)
  int64_t kv_heads = 0;    ///< a Llama's key/value heads (0: heads)
  // An MoE layer's MLP (moe_layer_activation_bytes).
  int64_t experts = 0;     ///< E
  int64_t top_k = 0;       ///< k
  int64_t expert_ffn = 0;  ///< f_e, an expert's SwiGLU width
  bool shared_expert = false;
};

/// The model's layer shape for micro-batches of `micro_batch` sequences.
ActivationShape activation_shape(const PlanModel& m, int64_t micro_batch);

/// Bytes one transformer layer keeps for backward for one micro-batch (Korthikanti et
/// al. 2022, "Reducing Activation Recomputation in Large Transformer Models", eq. 1-2):
///   tp = 1:  s b h (34 + 5 a s / h)
///   tp = t:  s b h (10 + 24 / t + 5 a s / (h t))    (tensor parallel, no sequence parallel)
///   recompute: 2 s b h  (the layer's input only)
/// The constants count 16-bit elements; `bytes_per_element` scales them (4 for fp32).
double layer_activation_bytes(const ActivationShape& shape, int tp, bool recompute,
                              double bytes_per_element);

/// What a layer keeps for backward: everything, all but attention's core (scores,
/// softmax, weighted values: Megatron's selective recomputation), or only its input.
enum class Recompute { kNone, kSelective, kFull };

/// How a layer is parallelised and recomputed, for layer_activation_bytes.
struct ActivationOptions {
  int tp = 1;
  bool sequence_parallel = false;  ///< norms, residual stream and dropout split by sequence
  Recompute recompute = Recompute::kNone;
  /// Korthikanti's model has dropout after attention's softmax and after both row-parallel
  /// layers (a 1-byte mask each and the softmax dropout's output); trident's has none.
  bool dropout = true;
  /// Context parallelism (models/ring_attention.h): s is this rank's tokens, and
  /// attention's core runs around the ring, keeping no scores (as selective recomputation)
  /// but its output in the heads' layout and each row's log-sum-exp, (h + a) / t elements
  /// a token; a Llama's keys and values are kept before their repetition to the query
  /// heads, 2 h kv / (a t) instead of 2 h / t.
  bool ring = false;
};

/// Korthikanti et al. 2022, table 2, per layer and micro-batch, in 16-bit elements' bytes
/// scaled by `bytes_per_element` / 2:
///   none:       s b h (10 + 24 / t + 5 a s / (h t)),  sequence parallel: s b h (34 + 5 a s / h) /
///   t selective:  s b h (10 + 24 / t),                  sequence parallel: s b h 34 / t full: 2 s
///   b h,                              sequence parallel: 2 s b h / t
/// Without dropout the 10 (or 34) loses the two s b h dropout masks, 8 (or 32), and the
/// 5 a s / h becomes 2 a s / h (the softmax's output only, no mask nor dropped copy).
/// A Llama layer, counted the same way (16-bit elements, r = t with sequence parallelism,
/// else 1):
///   none:       s b h (16 / r + (8 + 8 f / h) / t + 2 a s / (h t))
///   selective:  s b h (16 / r + (8 + 8 f / h) / t),     full: 2 s b h / r
/// The layer's input and attention's residual sum keep 4; each RMSNorm keeps the square of
/// its input, its normalised input before the weight and its output, 6 (where the GPT's
/// layer norms keep only their outputs, the next matmuls' inputs); attention keeps q, the
/// keys and values repeated to the query heads (grouped-query attention keeps as much as
/// full attention) and its output, 8 / t; SwiGLU keeps the gate's output, its silu, the up
/// projection and their product, 8 f / (h t) (the GPT's 4 h wide MLP: 16 / t).
double layer_activation_bytes(const ActivationShape& shape, const ActivationOptions& options,
                              double bytes_per_element);

/// A Llama layer whose MLP is an MoE layer (models/moe.cpp), dropless, counted as the dense
/// layer with the SwiGLU's 4 f / t elements a token replaced by what the MoE MLP keeps:
/// the router's probabilities (E, in the activation dtype: float32 at least in trident,
/// counted at the activation's), the k chosen scores, their sum and each choice's weight
/// (2 k + 1), each choice's input row, output row and weighted output row (3 k h: the
/// gathered input for the expert's matmuls, the output for its weight's gradient, the
/// weighted output that the combine's index_add keeps), each choice's SwiGLU (4 k f_e / t),
/// the shared expert's SwiGLU (4 f_e / t); plus bytes whatever the dtype: the router's
/// sorted expert indices, of which the top k are a view (int64, E), each expert's row
/// indices (int64, k) and each expert's mask of the choices (E k bools). At ep > 1 an
/// expert's rows arrive from the ep group: the same k choices a token on average, so the
/// same bytes when the load is balanced. With sequence parallelism the layer runs on the
/// gathered sequence, which the router keeps whole (h a token), and the norm's output
/// slice (h / t) is no longer kept. Full recomputation keeps the layer's input only.
double moe_layer_activation_bytes(const ActivationShape& shape, const ActivationOptions& options,
                                  double bytes_per_element);

/// Activations of the output side of the last stage for one micro-batch: the final
/// norm's input and output (2 s b h) and the logits with the softmax that the
/// cross-entropy keeps (2 s b V / t), in elements times `bytes_per_element`.
double head_activation_bytes(const PlanModel& m, int64_t micro_batch, int tp,
                             double bytes_per_element);

/// Bytes of attention's (s x s) score tensors that one layer holds in flight beyond what
/// the layers keep (models/attention_core.cpp), b a / t s^2 elements each: in forward the
/// scores (their product masks and scales them) and the softmax being written; in backward
/// the probabilities' gradient and the softmax's input gradient: two. Where the probabilities are
/// not kept (selective recomputation, context parallelism's ring) a backward rebuilds them: three.
/// With context parallelism s is this rank's s / cp, a ring block's side.
double attention_scores_in_flight(const PlanModel& m, const Layout& layout);

/// Micro-batches whose activations stage `stage` holds at once: GPipe holds all m;
/// 1F1B holds min(pp - stage, m) (the first stage the most); ZB-H1, whose later stages
/// defer weight gradients, min(pp, m) on every stage. Interleaved 1F1B counts model-chunk
/// micro-batches, each 1/v of a stage's: min(2 (pp - stage - 1) + (v - 1) pp + 1, v m)
/// (all v m when m == pp), as the schedule checker measures them.
int64_t in_flight_micro_batches(const std::string& schedule, int pp, int stage, int64_t m,
                                int64_t virtual_stages = 1);

/// Memory of one device by part, in bytes.
struct MemoryBreakdown {
  double parameters = 0, gradients = 0, optimizer_states = 0;
  double activations = 0;
  double communication = 0;   ///< ZeRO-2 bucket buffers, pipeline receive buffers, Muon's exchange
  double bucket_buffers = 0;  ///< the ZeRO-2 part of `communication`
  double gather_buffers = 0;  ///< ZeRO-3's gathered layers, also part of `communication`
  double offloaded = 0;       ///< model state in the nvme tier's files, not counted
  /// From ZeRO 2 on (in ZeRO 3 beyond the live layers): the largest bucket's gradients
  /// before its reduction, the tied embedding's gradient on a stage with both ends, and
  /// with the gradient in the tier the buffer a bucket's shard is summed in.
  double transient = 0;
  /// Attention's score tensors in flight beyond those kept (attention_scores_in_flight).
  double scores = 0;
  int stage = 0;            ///< the pipeline stage these figures are for
  int64_t params_held = 0;  ///< Ψ of that stage's device
  double total() const {
    return parameters + gradients + optimizer_states + activations + communication + transient +
           scores;
  }
};

/// ZeRO stage 3's split of a stage's parameters (elements of one device): those kept whole
/// (below zero3_persist_below, never the tied embedding), the most elements of one layer
/// that a gather brings in (the largest block, embeddings or head), and the routed
/// experts' elements among the sharded ones (sharded over dp / ep, the rest over dp).
struct Stage3Split {
  int64_t persistent = 0;
  int64_t largest_layer = 0;
  int64_t expert_sharded = 0;
};
Stage3Split stage3_split(const PlanModel& m, const Layout& layout, int stage);

/// The memory of the device at pipeline stage `stage` (tp rank 0). In stage 3 the
/// parameters are the shard of the sharded ones plus the persistent ones whole, and the
/// gather buffers hold zero3_max_live_layers of the largest layer (all of the stage's
/// sharded parameters when layers stay gathered through the step).
/// With offload (docs/offload.md) the nvme tier takes the optimizer's K psi / dp (and, with
/// offload_params in stage 3, the sharded parameters' shard) off the device: `offloaded`
/// holds those bytes, and its ring of buffers, buffer_count x (3 states) x block_size,
/// stays in optimizer_states. A tier other than "none" or "nvme" throws
/// std::invalid_argument: there is no "cpu" tier to count savings for.
MemoryBreakdown stage_memory(const PlanModel& m, const Layout& layout, int stage);

/// The stage whose device needs the most memory, and its figures.
MemoryBreakdown device_memory(const PlanModel& m, const Layout& layout);

}  // namespace trident::plan
