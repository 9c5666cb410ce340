// What the planner knows about a training job: the model's shape and batch (PlanModel),
// one candidate layout (Layout), the bytes per element each precision implies, and the
// arithmetic that follows from them (parameters per device, FLOPs per token).
// Plain structs: the CLI fills them from a TrainConfig, so this module needs no config.
#pragma once
#include <algorithm>  // std::max
#include <cstdint>    // int64_t
#include <string>     // std::string
#include <vector>     // std::vector

namespace trident::plan {

/// The model and batch of a training job, as the planner sees them.
struct PlanModel {
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t vocab = 256;
  int64_t vocab_multiple = 1;  ///< the embedding's rows are padded to lcm(this, tp)
  int64_t seq_len = 32;
  int64_t global_batch = 8;                 ///< sequences per optimizer step
  std::string precision = "fp32";           ///< "fp32", "fp64" or "bf16"
  std::string schedule = "1f1b";            ///< as parallel.schedule names it
  int64_t virtual_stages = 1;               ///< interleaved-1f1b: model chunks per stage
  std::string grad_reduce_dtype = "fp32";   ///< payload of bf16 gradient reductions
  int64_t bucket_size = 1 << 20;            ///< elements per gradient bucket
  int64_t zero3_max_live_layers = 2;        ///< ZeRO 3: layers gathered at once
  int64_t zero3_persist_below = 100000;     ///< ZeRO 3: smaller parameters stay whole
  bool zero3_reshard_after_forward = true;  ///< ZeRO 3: false keeps layers gathered all step
  std::string offload_optimizer = "none";   ///< "none" or "nvme": where K psi lives
  std::string offload_params = "none";      ///< ZeRO 3: where the parameter shard lives
  int64_t offload_buffer_count = 4;         ///< nvme: the ring's buffers on the device's host
  int64_t offload_block_size = 4 << 20;     ///< nvme: bytes per state per transfer
  /// train.allocator returns freed large blocks (resolved from "auto"): the peak RSS is
  /// then the live memory and the process base; kept, the heap's fragmentation adds to it.
  bool releases_host_memory = false;
  /// train.allocator as the config names it ("auto", "cache" or "release"): what --auto
  /// resolves for each placement it tries ("auto" releases when the tier holds state).
  std::string allocator = "auto";
  // The Llama family: SwiGLU's three matrices, grouped-query attention's smaller k and v,
  // RMSNorm without biases, RoPE instead of a position table, the head tied or not.
  bool llama = false;
  int64_t kv_heads = 0;    ///< 0: heads
  int64_t ffn_hidden = 0;  ///< 0: 4 * hidden (GPT-2)
  bool tied = true;        ///< GPT-2 always ties the head to the token embedding
  // Mixture-of-Experts MLPs (Llama only, docs/moe.md): 0 experts is the dense model.
  int64_t moe_experts = 0;
  int64_t moe_top_k = 2;
  int64_t moe_ffn_hidden = 0;   ///< an expert's SwiGLU width; 0: ffn_hidden
  int64_t moe_layer_every = 1;  ///< layer i is MoE when (i + 1) % moe_layer_every == 0
  bool moe_shared_expert = false;
  /// The spread of the experts' loads, their standard deviation over their mean: at ep > 1
  /// the ep rank whose experts got the most choices sets its group's pace (time_model.h).
  /// 0.5 is what a router near its initialisation gives (docs/planner.md); the balancing
  /// loss lowers it as training goes, and the progress line's `expert load` shows it.
  double moe_load_cv = 0.5;
  // optimizer.name = "muon": the blocks' matrices keep one state and are orthogonalised
  // whole each step (plan/muon_cost.h).
  bool muon = false;
  int64_t muon_ns_steps = 5;
  int64_t muon_exchange_mib = 256;

  /// Weights of the matrices of one dense layer, whole: GPT-2 12 h^2; Llama 2 h^2 (q, o) +
  /// 2 h * kv_heads * head_dim (k, v) + 3 h * ffn_hidden (gate, up, down).
  int64_t layer_matrix_params() const;
  /// Whether layer `index` (0-based, of the whole model) has an MoE MLP.
  bool moe_layer(int64_t index) const;
  /// The MoE layers among layers [first, first + count).
  int64_t moe_layers_in(int64_t first, int64_t count) const;
  /// An expert's SwiGLU width.
  int64_t expert_ffn() const { return moe_ffn_hidden > 0 ? moe_ffn_hidden : ffn_hidden; }
  /// Weights of one expert's three matrices, whole: 3 h * expert_ffn.
  int64_t expert_params() const { return 3 * hidden * expert_ffn(); }
  /// Weights an MoE layer's token multiplies by, whole: attention, the router (E h), its
  /// top-k experts and the shared expert.
  int64_t moe_layer_active_params() const;
};

/// One way to run the job: the process grid, ZeRO stage, micro-batch size and
/// activation checkpointing.
struct Layout {
  int dp = 1, pp = 1, tp = 1;
  int zero = 0;                    ///< ZeRO stage 0..3
  int64_t micro_batch = 1;         ///< sequences per micro-batch
  bool checkpointing = false;      ///< "full": keep each micro-batch's stage input, recompute
  bool selective = false;          ///< without full: recompute attention's core only
  bool sequence_parallel = false;  ///< with tp > 1: norms and residual stream split by sequence
  int ep = 1;  ///< expert parallelism: ep consecutive dp x cp ranks split each MoE layer's experts
  int cp = 1;  ///< context parallelism: cp consecutive ranks split each sequence (ring attention)

  int world() const { return dp * cp * pp * tp; }
  /// The ranks holding the same slice of the model, over which gradients are reduced and
  /// ZeRO shards states: dp x cp.
  int replicas() const { return dp * cp; }
  /// The ranks that hold the same experts and reduce and shard their states: dp cp / ep.
  int expert_dp() const { return replicas() / std::max(ep, 1); }
  /// Micro-batches per step on each dp rank: global_batch / (micro_batch * dp).
  int64_t micro_batches(const PlanModel& m) const;
  /// "dp4 pp2 tp1 zero1 mb2 ckpt" : a short name for messages and tables ("dp4 ep2 ..."
  /// with expert parallelism, "dp2 cp2 ..." with context parallelism).
  std::string name() const;
};

/// The model as one context-parallel rank of `layout` sees it: seq_len / cp tokens of each
/// sequence (the whole model when cp = 1). Attention's reach beyond them is the ring's
/// (time_model.h, memory_model.h).
PlanModel rank_tokens(const PlanModel& m, const Layout& layout);

/// Bytes per element of each kind of state, for one training precision. The optimizer
/// term is the ZeRO paper's K: everything AdamW keeps per parameter beyond the
/// parameter and its gradient (fp32 master copy when parameters are 16-bit, two moments).
struct StateBytes {
  double param = 4;       ///< the working parameters
  double grad = 4;        ///< the full gradient (ZeRO 0 and 1)
  double grad_shard = 4;  ///< a ZeRO-2/3 gradient shard
  double optimizer = 8;   ///< K
  double activation = 4;  ///< activations and the tensors sent between stages
  double transport = 4;   ///< payload of dp gradient reductions
};

/// trident's bytes per element for "fp32", "fp64" or "bf16" training: 16-bit parameters
/// get an fp32 master copy and fp32 moments (K = 12) and an fp32 ZeRO-2 gradient shard;
/// fp32/fp64 parameters are their own master (K = 8 or 16). Throws for other names.
StateBytes state_bytes_for(const std::string& precision, const std::string& grad_reduce_dtype);

/// The ZeRO paper's mixed-precision accounting (Rajbhandari et al. 2020, section 3.1):
/// fp16 parameters and gradients (2 + 2 bytes) and K = 12, fp16 gradient shards.
StateBytes zero_paper_mixed_precision();

/// The embedding's rows: vocab rounded up to a multiple of lcm(vocab_multiple, tp).
int64_t padded_vocab(const PlanModel& m, int tp);

/// Parameters held by the device at pipeline stage `stage` of `pp` and tp rank 0
/// (its tp shard, plus the norms and row-parallel biases every tp rank keeps whole).
/// The first stage holds the token and position embeddings, the last the final norm and
/// (when pp > 1) its copy of the tied token embedding. With MoE layers, the E / ep routed
/// experts of each that ep rank 0 holds (stage_expert_numels) are included.
int64_t stage_parameters(const PlanModel& m, int pp, int tp, int stage, int ep = 1);

/// One layer's parameters on one tp rank in the order the model constructs them: those in
/// the dp-sharded buffer (an MoE layer's router and shared expert among them) and the
/// routed experts that ep rank 0 holds (gate, up, down of each), apart.
struct LayerNumels {
  std::vector<int64_t> dense, experts;
};
LayerNumels layer_numels(const PlanModel& m, int tp, int ep, int64_t index);

/// The element counts of the stage's parameters on one tp rank in the order the model
/// constructs them (models/gpt.cpp, models/llama.cpp), without the tied token embedding
/// (or its head's copy), which ZeRO keeps in a flat buffer of its own, and without the
/// routed experts, which have theirs: the buffer ZeRO buckets over dp. An MoE layer adds
/// its router (whole on every tp rank) and its shared expert.
std::vector<int64_t> stage_bucketed_numels(const PlanModel& m, int pp, int tp, int stage);

/// The routed experts' element counts on one tp rank of ep rank 0 in construction order
/// (gate, up, down of each of the E / ep local experts of each MoE layer): the buffer ZeRO
/// reduces and shards over expert-dp (zero/buffer_assignment.h). Empty for a dense model.
std::vector<int64_t> stage_expert_numels(const PlanModel& m, int pp, int tp, int ep, int stage);

/// Their sum: the stage's parameters that are sharded over dp / ep instead of dp.
int64_t stage_expert_parameters(const PlanModel& m, int pp, int tp, int ep, int stage);

/// Parameters of the whole model, each counted once.
int64_t total_parameters(const PlanModel& m);

/// Parameters a token is multiplied by: the total less the E - k experts of each MoE layer
/// it does not go to.
int64_t active_parameters(const PlanModel& m);

/// Forward FLOPs of one token through one dense transformer layer, whole (not divided by
/// tp): 2 per multiply-add of the layer's matrix weights (12 h^2 for GPT-2), and 2 * 2 * s * h
/// for attention's two (s x s) products (trident computes the full square, masked).
double layer_forward_flops_per_token(const PlanModel& m);

/// The same through an MoE layer: its active weights (moe_layer_active_params) instead of
/// the dense MLP's, dropless (every choice computed).
double moe_layer_forward_flops_per_token(const PlanModel& m);

/// Forward FLOPs of one token through layers [first, first + count), dense and MoE.
double layers_forward_flops_per_token(const PlanModel& m, int64_t first, int64_t count);

/// Forward FLOPs of one token through the output head: 2 * padded_vocab * hidden.
double head_forward_flops_per_token(const PlanModel& m, int tp);

/// FLOPs of one optimizer step as the trainer reports them (forward + 2x backward, no
/// recomputation, the vocabulary padded for `tp`): turns step times into TFLOP/s.
double model_flops_per_step(const PlanModel& m, int tp);

}  // namespace trident::plan
