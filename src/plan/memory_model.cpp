// Memory per device: ZeRO model states, Korthikanti activations, communication buffers.
#include "plan/memory_model.h"

#include <algorithm>  // std::min, std::max
#include <stdexcept>  // std::invalid_argument
#include <string>     // std::to_string

#include "plan/muon_cost.h"      // muon_state_saving, muon_exchange_bytes
#include "zero/bucket_layout.h"  // BucketLayout: ZeRO's own bucketing, torch-free

namespace trident::plan {

ModelStates zero_model_states(double psi, int dp, int stage, const StateBytes& b) {
  const double n = static_cast<double>(std::max(dp, 1));
  const double k = b.optimizer;
  switch (stage) {
    case 0:
      return {b.param * psi, b.grad * psi, k * psi};
    case 1:
      return {b.param * psi, b.grad * psi, k * psi / n};
    case 2:
      return {b.param * psi, b.grad_shard * psi / n, k * psi / n};
    case 3:
      return {b.param * psi / n, b.grad_shard * psi / n, k * psi / n};
    default:
      throw std::invalid_argument("plan: ZeRO stage " + std::to_string(stage) +
                                  " does not exist; use 0, 1, 2 or 3");
  }
}

double layer_activation_bytes(const ActivationShape& x, int tp, bool recompute,
                              double bytes_per_element) {
  const double s = static_cast<double>(x.seq_len), b = static_cast<double>(x.micro_batch);
  const double h = static_cast<double>(x.hidden), a = static_cast<double>(x.heads);
  const double t = static_cast<double>(std::max(tp, 1));
  const double scale = bytes_per_element / 2.0;  // the constants are for 2-byte elements
  if (recompute) return 2.0 * s * b * h * scale;
  // With t = 1 this is s b h (34 + 5 a s / h).
  return s * b * h * (10.0 + 24.0 / t + 5.0 * a * s / (h * t)) * scale;
}

double layer_activation_bytes(const ActivationShape& x, const ActivationOptions& o,
                              double bytes_per_element) {
  const double s = static_cast<double>(x.seq_len), b = static_cast<double>(x.micro_batch);
  const double h = static_cast<double>(x.hidden), a = static_cast<double>(x.heads);
  const double t = static_cast<double>(std::max(o.tp, 1));
  const double scale = bytes_per_element / 2.0;  // the constants are for 2-byte elements
  // Sequence parallelism splits what plain tp replicates: the norms' inputs, the inputs of
  // the column-parallel layers, and the dropout masks after the row-parallel ones.
  const double replicated_split = o.sequence_parallel ? t : 1.0;
  if (o.recompute == Recompute::kFull) return 2.0 * s * b * h / replicated_split * scale;
  const bool dropout = o.dropout && !x.llama;  // Llama has none
  const double core = o.recompute == Recompute::kSelective || o.ring ? 0.0 : (dropout ? 5.0 : 2.0);
  // The ring's output and row statistics, in the formula's 2-byte units a token over h.
  double ring = o.ring ? 2.0 * (1.0 + a / h) / t : 0.0;
  if (x.llama) {
    const double f = static_cast<double>(x.ffn_hidden > 0 ? x.ffn_hidden : 4 * x.hidden);
    if (o.ring) {  // keys and values kept unrepeated: 2 h kv / a instead of 2 h
      const double kv = static_cast<double>(x.kv_heads > 0 ? x.kv_heads : x.heads);
      ring += 2.0 * 2.0 * (kv / a - 1.0) / t;
    }
    return s * b * h *
           (16.0 / replicated_split + (8.0 + 8.0 * f / h) / t + ring + core * a * s / (h * t)) *
           scale;
  }
  const double replicated = (dropout ? 10.0 : 8.0) / replicated_split;
  return s * b * h * (replicated + 24.0 / t + ring + core * a * s / (h * t)) * scale;
}

double moe_layer_activation_bytes(const ActivationShape& x, const ActivationOptions& o,
                                  double bytes_per_element) {
  ActivationShape dense = x;
  dense.llama = true;
  dense.ffn_hidden = 0;  // the formula's SwiGLU term is taken out below
  const double s = static_cast<double>(x.seq_len), b = static_cast<double>(x.micro_batch);
  const double h = static_cast<double>(x.hidden), t = static_cast<double>(std::max(o.tp, 1));
  const double tokens = s * b;
  const double base = layer_activation_bytes(dense, o, bytes_per_element);
  if (o.recompute == Recompute::kFull) return base;
  // The dense formula's SwiGLU at f = 4 h: 4 f / t = 16 h / t elements a token.
  const double swiglu = tokens * 16.0 * h / t * bytes_per_element;
  const double E = static_cast<double>(x.experts), k = static_cast<double>(x.top_k);
  const double f = static_cast<double>(x.expert_ffn);
  const double elements =
      E + 2.0 * k + 1.0 + 3.0 * k * h + 4.0 * k * f / t + (x.shared_expert ? 4.0 * f / t : 0.0);
  const double fixed = (E + k) * 8.0 + E * k;  // int64 indices, bool masks
  // With sequence parallelism the layer runs on the gathered sequence, which the router
  // keeps whole, while the norm's output slice, counted in the dense formula, is not kept.
  const double gathered = o.sequence_parallel ? h - h / t : 0.0;
  return base - swiglu + tokens * ((elements + gathered) * bytes_per_element + fixed);
}

double head_activation_bytes(const PlanModel& m, int64_t micro_batch, int tp,
                             double bytes_per_element) {
  const double sb = static_cast<double>(m.seq_len * micro_batch);
  const double v = static_cast<double>(padded_vocab(m, tp)) / std::max(tp, 1);
  return (2.0 * sb * static_cast<double>(m.hidden) + 2.0 * sb * v) * bytes_per_element;
}

int64_t in_flight_micro_batches(const std::string& schedule, int pp, int stage, int64_t m,
                                int64_t virtual_stages) {
  if (schedule == "gpipe") return m;
  if (schedule == "zb-h1") return std::min<int64_t>(pp, m);
  if (schedule == "interleaved-1f1b") {
    const int64_t v = virtual_stages, total = v * m;
    if (m == pp) return total;
    return std::min<int64_t>(2 * (pp - stage - 1) + (v - 1) * pp + 1, total);
  }
  return std::min<int64_t>(pp - stage, m);
}

ActivationShape activation_shape(const PlanModel& m, int64_t micro_batch) {
  ActivationShape shape{m.seq_len, micro_batch,  m.hidden,  m.heads,
                        m.llama,   m.ffn_hidden, m.kv_heads};
  shape.experts = m.moe_experts;
  shape.top_k = m.moe_top_k;
  shape.expert_ffn = m.expert_ffn();
  shape.shared_expert = m.moe_shared_expert;
  return shape;
}

namespace {

/// Activation bytes the stage's device holds at its peak.
double stage_activations(const PlanModel& whole, const Layout& l, int stage) {
  const PlanModel m = rank_tokens(whole, l);  // with context parallelism, this rank's tokens
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  const ActivationShape shape = activation_shape(m, l.micro_batch);
  const int64_t layers = m.layers / l.pp;
  const bool last = stage == l.pp - 1;
  // One micro-batch's complete activations through this stage.
  ActivationOptions options;
  options.tp = l.tp;
  options.sequence_parallel = l.sequence_parallel;
  options.recompute = l.selective ? Recompute::kSelective : Recompute::kNone;
  options.ring = l.cp > 1;
  const double moe = static_cast<double>(m.moe_layers_in(stage * layers, layers));
  const double dense_layer = layer_activation_bytes(shape, options, b.activation);
  const double moe_layer = moe > 0 ? moe_layer_activation_bytes(shape, options, b.activation) : 0.0;
  double full = (static_cast<double>(layers) - moe) * dense_layer + moe * moe_layer;
  if (last) full += head_activation_bytes(m, l.micro_batch, l.tp, b.activation);
  const int64_t v = m.schedule == "interleaved-1f1b" ? std::max<int64_t>(m.virtual_stages, 1) : 1;
  // In stage-sized units: an interleaved stage's in-flight count is of 1/v-sized chunks.
  const double in_flight =
      static_cast<double>(in_flight_micro_batches(m.schedule, l.pp, stage, l.micro_batches(m), v)) /
      static_cast<double>(v);
  if (!l.checkpointing) return in_flight * full;
  // With sequence parallelism a layer's input is this rank's slice of the sequence.
  const double sb = static_cast<double>(m.seq_len * l.micro_batch);
  const double slices = l.sequence_parallel ? static_cast<double>(l.tp) : 1.0;
  const double input = sb * static_cast<double>(m.hidden) * b.activation / slices;
  const double ids = 2.0 * sb * 8.0;  // the first stage's token ids and targets (int64)
  if (m.schedule == "zb-h1") {
    // ZB-H1 checkpoints whole stages: every in-flight micro-batch keeps its stage input
    // (token ids on the first stage), and the input half of one micro-batch's backward
    // rebuilds that micro-batch's complete activations.
    return in_flight * (stage == 0 ? ids : input) + full;
  }
  // Layer by layer: every in-flight micro-batch keeps each block's input (and the head's,
  // on a last stage that does not hold the embedding too: see GptStage::forward), and a
  // backward rebuilds one layer's activations at a time (the head's first).
  double kept = static_cast<double>(layers) * input + (stage == 0 ? ids : 0.0);
  double rebuilt = moe > 0 ? std::max(dense_layer, moe_layer) : dense_layer;
  if (last) {
    const double head = head_activation_bytes(m, l.micro_batch, l.tp, b.activation);
    if (stage != 0) {  // recomputed: its input kept, its activations rebuilt first
      kept += input;
      rebuilt = std::max(rebuilt, head);
    } else {  // it reads the embedding the first unit reads: kept whole
      kept += head;
    }
  }
  return in_flight * kept + rebuilt;
}

/// ZeRO-2's two bucket buffers (double buffering), each a bucket and its reduced shard,
/// sized as trident sizes them (zero/zero_optimizer.cpp): the largest bucket of several
/// parameters in the stage's bucket layout (zero/bucket_layout.h); a bucket of one
/// parameter (the tied embedding, anything over bucket_size) is sent from its own gradient.
double bucket_buffers(const PlanModel& m, const Layout& l, int stage) {
  if (l.zero < 2 || l.replicas() <= 1) return 0;
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  // The widest of the dp buffer's buckets and of the experts' (over expert-dp).
  double widest = 0;
  auto scan = [&](const std::vector<int64_t>& numels, int group) {
    const BucketLayout layout(numels, m.bucket_size, group);
    for (const Bucket& bucket : layout.buckets())
      if (bucket.params.size() > 1) {
        const double n = static_cast<double>(bucket.numel);
        widest = std::max(widest, n + n / group);
      }
  };
  scan(stage_bucketed_numels(m, l.pp, l.tp, stage), l.replicas());
  if (l.expert_dp() > 1) scan(stage_expert_numels(m, l.pp, l.tp, l.ep, stage), l.expert_dp());
  return 2.0 * widest * b.transport;
}

/// The activation and the gradient being received from the neighbouring stages.
double pipeline_buffers(const PlanModel& whole, const Layout& l) {
  if (l.pp <= 1) return 0;
  const PlanModel m = rank_tokens(whole, l);
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  const double slices = l.sequence_parallel ? static_cast<double>(l.tp) : 1.0;
  return 2.0 * static_cast<double>(m.seq_len * l.micro_batch * m.hidden) * b.activation / slices;
}

}  // namespace

Stage3Split stage3_split(const PlanModel& m, const Layout& l, int stage) {
  const int64_t h = m.hidden, t = l.tp;
  Stage3Split out;
  auto add = [&](int64_t n, int64_t& gathered) {
    if (n < m.zero3_persist_below) {
      out.persistent += n;
    } else {
      gathered += n;
    }
  };
  // Each block, as the model constructs it on one tp rank (layer_numels): the experts of
  // ep rank 0 are gathered over expert-dp with the rest of their layer.
  const int64_t layers = m.layers / l.pp;
  for (int64_t i = stage * layers; i < (stage + 1) * layers; ++i) {
    const LayerNumels numels = layer_numels(m, l.tp, l.ep, i);
    int64_t block = 0, experts = 0;
    for (int64_t n : numels.dense) add(n, block);
    for (int64_t n : numels.experts) add(n, experts);
    out.expert_sharded += experts;
    out.largest_layer = std::max(out.largest_layer, block + experts);
  }
  const int64_t embedding = padded_vocab(m, t) / t * h;  // sharded whatever its size (tied)
  if (stage == 0) {
    int64_t layer = embedding;
    if (!m.llama) add(m.seq_len * h, layer);  // GPT-2's positions
    out.largest_layer = std::max(out.largest_layer, layer);
  }
  if (stage == l.pp - 1) {
    int64_t layer = m.llama && m.tied && l.pp == 1 ? 0 : embedding;  // the head or its copy
    add(h, layer);                                                   // the final norm's weight
    if (!m.llama) add(h, layer);                                     // and GPT-2's bias
    out.largest_layer = std::max(out.largest_layer, layer);
  }
  return out;
}

namespace {

/// Whether `tier` (the value of parallel.`key`) takes states off the device. Only "nvme"
/// runs: there is no "cpu" tier (a CPU-device run keeps its states in host memory anyway,
/// a CUDA run has no pinned-host tier), so the planner counts no savings for it.
bool offloaded_to_files(const std::string& tier, const char* key) {
  if (tier == "none") return false;
  if (tier == "nvme") return true;
  throw std::invalid_argument(std::string("plan: parallel.") + key + " = \"" + tier +
                              "\" is not a tier trident runs; use \"nvme\" or \"none\"");
}

}  // namespace

double attention_scores_in_flight(const PlanModel& whole, const Layout& l) {
  const PlanModel m = rank_tokens(whole, l);
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  const bool rebuilt = (l.selective || l.cp > 1) && !l.checkpointing;
  const double s = static_cast<double>(m.seq_len);
  return (rebuilt ? 3.0 : 2.0) * static_cast<double>(l.micro_batch) *
         static_cast<double>(m.heads / l.tp) * s * s * b.activation;
}

MemoryBreakdown stage_memory(const PlanModel& m, const Layout& l, int stage) {
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  const int64_t psi = stage_parameters(m, l.pp, l.tp, stage, l.ep);
  // The routed experts' states are sharded over expert-dp, the rest over dp.
  const int64_t experts = stage_expert_parameters(m, l.pp, l.tp, l.ep, stage);
  ModelStates states =
      zero_model_states(static_cast<double>(psi - experts), l.replicas(), l.zero, b);
  if (experts > 0) {
    const ModelStates e = zero_model_states(static_cast<double>(experts), l.expert_dp(), l.zero, b);
    states.parameters += e.parameters;
    states.gradients += e.gradients;
    states.optimizer_states += e.optimizer_states;
  }
  MemoryBreakdown out;
  out.stage = stage;
  out.params_held = psi;
  out.parameters = states.parameters;
  out.gradients = states.gradients;
  // Muon keeps one moment of its matrices, and gathers them whole through a buffer.
  out.optimizer_states = states.optimizer_states - muon_state_saving(m, l, stage);
  out.activations = stage_activations(m, l, stage);
  out.scores = attention_scores_in_flight(m, l);
  out.bucket_buffers = bucket_buffers(m, l, stage);
  if (l.zero == 3) {
    const Stage3Split split = stage3_split(m, l, stage);
    const double sharded = static_cast<double>(psi - split.persistent);
    const double expert_sharded = static_cast<double>(split.expert_sharded);
    out.parameters = b.param * ((sharded - expert_sharded) / std::max(l.replicas(), 1) +
                                expert_sharded / std::max(l.expert_dp(), 1) +
                                static_cast<double>(split.persistent));
    out.gather_buffers = b.param * (m.zero3_reshard_after_forward
                                        ? static_cast<double>(std::min<int64_t>(
                                              m.zero3_max_live_layers, m.layers / l.pp + 2)) *
                                              static_cast<double>(split.largest_layer)
                                        : sharded);
  }
  out.communication = out.bucket_buffers + out.gather_buffers + pipeline_buffers(m, l) +
                      muon_exchange_bytes(m, l, stage);
  const bool params_offloaded =
      offloaded_to_files(m.offload_params, "offload_params") && l.zero == 3;
  if (offloaded_to_files(m.offload_optimizer, "offload_optimizer")) {
    // The tier file's planes (zero/zero_offload.cpp): both moments, the fp32 master of
    // 16-bit parameters, the reduced gradient shard from stage 2 on, the parameter shard
    // when offloaded; the ring holds one piece of each, a piece being offload_block_size
    // bytes of the state dtype.
    out.offloaded = out.optimizer_states;
    const double state = m.precision == "fp64" ? 8.0 : 4.0;
    double planes = 2.0 + (m.precision == "bf16" ? 1.0 : 0.0);
    if (l.zero >= 2) {
      planes += b.grad_shard / state;
      out.offloaded += out.gradients;
      out.gradients = 0.0;
    }
    if (params_offloaded) planes += b.param / state;
    out.optimizer_states = static_cast<double>(m.offload_buffer_count) * planes *
                           static_cast<double>(m.offload_block_size);
  }
  if (l.zero >= 2) {
    // From stage 2 on the gradients leave by buckets (zero/zero_optimizer.cpp copies a
    // bucket's full-size gradients out and drops them once the last one arrived): the
    // stage's real bucket layout, and the tied embedding's buffer of its own on the stages
    // that hold a copy, so the largest bucket is the most gradient held at once.
    int64_t largest = 0, largest_shard = 0;
    auto widest = [&](const std::vector<int64_t>& numels, int group) {
      const BucketLayout layout(numels, m.bucket_size, group);
      for (const Bucket& bucket : layout.buckets()) {
        largest = std::max(largest, bucket.numel);
        largest_shard = std::max(largest_shard, bucket.shard_numel);
      }
    };
    widest(stage_bucketed_numels(m, l.pp, l.tp, stage), l.replicas());
    if (experts > 0) widest(stage_expert_numels(m, l.pp, l.tp, l.ep, stage), l.expert_dp());
    if (m.tied && (stage == 0 || stage == l.pp - 1))
      widest({padded_vocab(m, l.tp) / l.tp * m.hidden}, l.replicas());
    out.transient = b.grad * static_cast<double>(largest);
    // A stage with both ends of a tied model: the head's share of the embedding's gradient
    // is produced first in backward and kept until the embedding's own arrives last.
    if (m.tied && l.pp == 1)
      out.transient += b.grad * static_cast<double>(padded_vocab(m, l.tp) / l.tp * m.hidden);
    // In stage 3, a released layer's memory kept for the next gather is not counted: a
    // spare exists only while fewer than zero3_max_live_layers are gathered, and the next
    // prefetch takes it (measured: gathered and spare together peak at the live bound).
    // The tier's gradient buffer: the largest bucket's shard.
    if (out.offloaded > 0) out.transient += b.grad_shard * static_cast<double>(largest_shard);
  }
  if (params_offloaded) {
    const double persistent = static_cast<double>(stage3_split(m, l, stage).persistent);
    const double shard = out.parameters - b.param * persistent;
    out.offloaded += shard;
    out.parameters -= shard;
  }
  return out;
}

MemoryBreakdown device_memory(const PlanModel& m, const Layout& l) {
  MemoryBreakdown worst = stage_memory(m, l, 0);
  for (int s = 1; s < l.pp; ++s) {
    const MemoryBreakdown here = stage_memory(m, l, s);
    if (here.total() > worst.total()) worst = here;
  }
  return worst;
}

}  // namespace trident::plan
