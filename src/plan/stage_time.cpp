// One micro-batch on one stage: compute, tp collectives, all-to-alls and ring transfers.
#include "plan/stage_time.h"

#include <algorithm>  // std::max, std::min
#include <cmath>      // std::cbrt

#include "plan/memory_model.h"  // layer_activation_bytes, head_activation_bytes

namespace trident::plan {

StageShape stage_shape(const PlanModel& whole, const Layout& l, const Cluster& c, int stage,
                       int chunks) {
  StageShape s;
  s.m = rank_tokens(whole, l);  // with context parallelism, this rank's tokens
  const PlanModel& m = s.m;
  s.b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  s.stage = stage;
  s.stages = l.pp * chunks;
  s.first = stage == 0;
  s.last = stage == s.stages - 1;
  s.stage_layers = m.layers / s.stages;
  s.first_layer = stage * s.stage_layers;
  s.tokens = static_cast<double>(m.seq_len * l.micro_batch);
  s.layers = static_cast<double>(s.stage_layers);
  s.moe = static_cast<double>(m.moe_layers_in(s.first_layer, s.stage_layers));
  s.h = static_cast<double>(m.hidden);
  s.sl = static_cast<double>(m.seq_len);
  s.cp = static_cast<double>(l.cp);
  s.ep = static_cast<double>(std::max(l.ep, 1));
  s.ring_blocks = (s.cp + 1.0) / 2.0;
  s.kv_heads = static_cast<double>(m.llama && m.kv_heads > 0 ? m.kv_heads : m.heads);
  // The routed experts' matmuls apart: each expert multiplies only its own rows, about
  // tokens k ep / E of them (the ep group's tokens), at the rate of that smaller matmul.
  if (s.moe > 0)
    s.expert_rows =
        s.tokens * static_cast<double>(m.moe_top_k) * s.ep / static_cast<double>(m.moe_experts);
  s.expert_flops = s.moe * s.tokens * static_cast<double>(m.moe_top_k) * 2.0 *
                   static_cast<double>(m.expert_params()) / l.tp;
  s.rate = c.matmul_flops(m.precision, std::cbrt(s.tokens * s.h * 4.0 * s.h / l.tp));
  s.expert_rate =
      s.moe > 0 ? c.matmul_flops(m.precision, std::cbrt(s.expert_rows * s.h *
                                                        static_cast<double>(m.expert_ffn()) / l.tp))
                : s.rate;
  // Ranks computing at once on shared cores and memory slow each other down.
  s.contention = c.contention_at(ranks_sharing(l, c));
  s.passes = l.checkpointing ? 2.0 : 1.0;
  return s;
}

MatmulTime forward_matmuls(const StageShape& s, const Layout& l) {
  double flops =
      s.tokens * layers_forward_flops_per_token(s.m, s.first_layer, s.stage_layers) / l.tp -
      s.expert_flops;
  if (s.last) flops += s.tokens * head_forward_flops_per_token(s.m, l.tp) / l.tp;
  // Ring attention: each rank's queries meet its own keys in one masked s' x s' block
  // (counted above) and each other rank's in a half block, 4 s' h / t FLOPs a token each.
  if (l.cp > 1) flops += s.tokens * s.layers * 4.0 * s.sl * s.h / l.tp * (s.ring_blocks - 1.0);
  const double seconds = flops / s.rate + s.expert_flops / s.expert_rate;
  return {flops + s.expert_flops, seconds};
}

double mean_layer_activation_bytes(const StageShape& s, const Layout& l) {
  const ActivationShape shape = activation_shape(s.m, l.micro_batch);
  ActivationOptions options;
  options.tp = l.tp;
  options.sequence_parallel = l.sequence_parallel;
  const double dense = layer_activation_bytes(shape, options, s.b.activation);
  const double moe = s.moe > 0 ? moe_layer_activation_bytes(shape, options, s.b.activation) : 0.0;
  return ((s.layers - s.moe) * dense + s.moe * moe) / s.layers;
}

CoreRerun attention_core_rerun(const StageShape& s, const Layout& l, double layer_act,
                               double stream) {
  CoreRerun r;
  if (!(l.selective || l.cp > 1) || l.checkpointing) return r;
  // Attention's two (s x s) products, 2 * 2 * s * h FLOPs a token, and the softmax over
  // the scores it rebuilds. Ring attention rebuilds each block's scores in its backward.
  r.flops = s.tokens * s.layers * 4.0 * s.sl * s.h / l.tp * (l.cp > 1 ? s.ring_blocks : 1.0);
  r.matmul_s = r.flops / s.rate;
  if (stream > 0 && l.cp == 1) {
    ActivationOptions options;
    options.tp = l.tp;
    options.sequence_parallel = l.sequence_parallel;
    options.recompute = Recompute::kSelective;
    const double core_act = layer_act - layer_activation_bytes(activation_shape(s.m, l.micro_batch),
                                                               options, s.b.activation);
    r.elementwise_s = 2.0 * s.layers * core_act / stream;
  }
  return r;
}

RingElementwise ring_elementwise(const StageShape& s, const Layout& l, double stream) {
  RingElementwise r;
  if (stream <= 0 || l.cp <= 1) return r;
  // Its scores, which the activations do not count (none is kept): (cp + 1) / 2 blocks of
  // s'^2 a token-pairs a layer, each through what whole attention's go through (scale,
  // mask, normalise, exponentiate, and back): six passes, as whole attention's are charged.
  const double heads = static_cast<double>(s.m.heads);
  const double scores = static_cast<double>(l.micro_batch) * heads / l.tp * s.sl * s.sl *
                        s.ring_blocks * s.b.activation;
  r.scores_s = s.layers * 6.0 * scores / stream;
  // Each ring step streams tensors of the output's and the keys' size
  // (models/ring_attention.cpp), E this rank's q or output bytes, K its k (or v) bytes:
  // forward, each block after the diagonal one rescales and adds its rows of the output
  // by the log-sum-exp rule, about 7 E; backward, every block fills, copies and adds a
  // fresh key and value gradient (about 10 K) and adds its rows of dq (3 E). Grouped kv
  // heads repeat keys and values to the query heads (3 E, again in backward) and sum their
  // gradients back (2 E).
  const double q_bytes = s.tokens * s.h / l.tp * s.b.activation;  // E
  const double k_bytes = q_bytes * s.kv_heads / heads;            // K
  const double grouped = s.kv_heads < heads ? 1.0 : 0.0;
  const double forward = (s.cp - 1.0) * 7.0 * q_bytes + s.cp * grouped * 3.0 * q_bytes;
  const double backward = s.cp * (10.0 * k_bytes + 3.0 * q_bytes + grouped * 5.0 * q_bytes);
  r.steps_s = s.layers * (forward + backward) / stream;
  r.forward_s = s.layers * forward / stream;
  return r;
}

Elementwise elementwise(const StageShape& s, const Layout& l, double layer_act, double stream) {
  Elementwise e;
  if (stream <= 0) return e;
  // Norms, softmax, GELU and residual adds stream the saved activations: written and read
  // in forward, read and their gradients written and read in backward.
  double act = s.layers * layer_act;
  if (s.last) act += head_activation_bytes(s.m, l.micro_batch, l.tp, s.b.activation);
  e.activations_s = 6.0 * act / stream;
  if (s.moe > 0 && l.ep > 1) {
    // Expert parallelism copies each choice's row about six times a pass (concatenated to
    // send, received, gathered per expert, zero-filled and scattered, received back), read
    // and written; backward does the same twice.
    const double rows = s.tokens * static_cast<double>(s.m.moe_top_k) * s.h * s.b.activation;
    e.expert_copies_s = s.moe * 3.0 * 6.0 * 2.0 * rows / stream;
  }
  e.recompute_s = 2.0 * act / stream;
  return e;
}

double operator_calls_s(const StageShape& s, const Layout& l, const Cluster& c) {
  const double overhead_us = c.layer_calls_us(s.m.llama, l.tp > 1);
  const double ends_us = c.ends_overhead_us > 0 ? c.ends_overhead_us : 2.0 * overhead_us;
  // An MoE layer issues more calls than a dense one (about 40 forward): the router's ten,
  // a dozen to pick each of the E experts' rows, weights and combine, five for each local
  // expert's SwiGLU, in place of the dense MLP's five.
  const double E = static_cast<double>(s.m.moe_experts);
  const double moe_calls = s.moe > 0 ? (10.0 + 12.0 * E + 5.0 * E / s.ep - 5.0) / 40.0 : 0.0;
  // Ring attention issues about 20 calls for each of its cp blocks.
  const double ring_calls = l.cp > 1 ? s.cp * 20.0 / 40.0 : 0.0;
  return ((s.layers * (1.0 + ring_calls) + s.moe * moe_calls) * overhead_us +
          ((s.first ? 0.5 : 0.0) + (s.last ? 0.5 : 0.0)) * ends_us) *
         1e-6;
}

double weights_s(const PlanModel& whole, const StageShape& s, const Layout& l, const Cluster& c) {
  if (c.weight_gbps <= 0) return 0;
  // Packed for the forward's and the input gradient's products, the gradient written and
  // added to the accumulated one, every micro-batch.
  const double bytes =
      static_cast<double>(stage_parameters(whole, s.stages, l.tp, s.stage, l.ep)) * s.b.param;
  return bytes / (c.weight_gbps * 1e9);
}

double zb_h1_input_half_s(double forward_matmul_s, double base) {
  // The input-gradient chain walks every elementwise op and call of the backward; the
  // weight half walks the whole graph again (docs/performance.md: B + W = 1.52 backwards).
  return forward_matmul_s + (base - 3.0 * forward_matmul_s) * 2.0 / 3.0;
}

ComputeTime micro_batch_compute(const PlanModel& whole, const StageShape& s, const Layout& l,
                                const Cluster& c) {
  const MatmulTime matmuls = forward_matmuls(s, l);
  // Forward and backward (twice the forward); recomputation comes on top. A recomputed
  // forward runs the operator calls again (a third) and packs the weights again (a sixth).
  double base = 3.0 * matmuls.seconds;
  double recompute_flops = l.checkpointing ? matmuls.flops : 0.0;
  double recompute = l.checkpointing ? matmuls.seconds : 0.0;
  const double layer_act = mean_layer_activation_bytes(s, l);
  const double stream = c.elementwise_bytes_per_s(layer_act, s.m.llama);
  const CoreRerun core = attention_core_rerun(s, l, layer_act, stream);
  recompute_flops += core.flops;
  recompute += core.matmul_s;
  recompute += core.elementwise_s;
  const RingElementwise ring = ring_elementwise(s, l, stream);
  base += ring.scores_s;
  base += ring.steps_s;
  const Elementwise e = elementwise(s, l, layer_act, stream);
  base += e.activations_s;
  base += e.expert_copies_s;
  const double calls = operator_calls_s(s, l, c);
  base += calls;
  const double weights = weights_s(whole, s, l, c);
  base += weights;
  if (l.checkpointing) {
    recompute += ring.forward_s;
    recompute += e.recompute_s;
    recompute += calls / 3.0;
    recompute += weights / 6.0;
  }
  // The first stage has no input gradient: its weight half is all of the backward.
  if (s.m.schedule == "zb-h1" && l.pp > 1 && !s.first) {
    recompute_flops += matmuls.flops;
    recompute += zb_h1_input_half_s(matmuls.seconds, base);
  }
  ComputeTime t;
  t.flops = 3.0 * matmuls.flops + recompute_flops;
  t.forward = s.contention * base / 3.0;
  t.backward = s.contention * base * 2.0 / 3.0;
  t.compute = s.contention * (base + recompute);
  return t;
}

TpCounts& TpCounts::operator+=(const TpCounts& o) {
  all_reduce += o.all_reduce;
  all_gather += o.all_gather;
  reduce_scatter += o.reduce_scatter;
  return *this;
}

void tp_counts(const PlanModel& m, const Layout& l, bool first, bool last, double layers,
               TpCounts& forward, TpCounts& backward) {
  // A column-parallel linear (GPT-2: qkv and fc; Llama: q, k, v, gate and up) all-reduces
  // its input's gradient in backward; a row-parallel one (the projections) its output in
  // forward. With sequence parallelism a column-parallel linear all-gathers its input in
  // forward and again in backward and reduce-scatters its input's gradient; a row-parallel
  // one reduce-scatters its output and all-gathers the gradient. The embedding reduces its
  // output (reduce-scatters, with sequence parallelism), the head takes its input like a
  // column-parallel layer. Full recomputation runs each forward again in backward.
  const double column = m.llama ? 5.0 : 2.0, row = 2.0;
  const double head = last ? 1.0 : 0.0, embed = first ? 1.0 : 0.0;
  if (l.sequence_parallel) {
    forward.all_gather = layers * column + head;
    forward.reduce_scatter = layers * row + embed;
    backward.all_gather = layers * (column + row) + embed;
    backward.reduce_scatter = layers * column + head;
  } else {
    forward.all_reduce = layers * row + embed;
    backward.all_reduce = layers * column + head;
  }
  if (l.checkpointing) {
    TpCounts again = forward;
    again.all_gather -= head;  // the head's input is not recomputed
    backward += again;
  }
}

double tp_seconds(const TpCounts& n, double bytes, int tp, const Link& link) {
  return n.all_reduce * all_reduce_s(bytes, tp, link) +
         n.all_gather * all_gather_s(bytes, tp, link) +
         n.reduce_scatter * reduce_scatter_s(bytes, tp, link);
}

PassSeconds moe_layer_tp(const StageShape& s, const Layout& l, const Link& link) {
  // The shared expert's and each local expert's all-reduces over their rows (down's output
  // forward, gate's and up's input gradients backward), and attention's: q, k and v's
  // input gradients and o's output, or with sequence parallelism the gathers and
  // reduce-scatters, with the gather of the sequence before the MoE layer (and of its
  // output's gradient, backward).
  const double bytes = s.tokens * s.h * s.b.activation;
  const double shared = s.m.moe_shared_expert ? 1.0 : 0.0;
  const double local = static_cast<double>(s.m.moe_experts) / s.ep;
  const double expert_bytes = s.expert_rows * s.h * s.b.activation;
  const double reduce = all_reduce_s(bytes, l.tp, link);
  PassSeconds t;
  t.forward = shared * reduce + local * all_reduce_s(expert_bytes, l.tp, link);
  t.backward = 2.0 * shared * reduce + 2.0 * local * all_reduce_s(expert_bytes, l.tp, link);
  if (l.sequence_parallel) {
    const double gather = all_gather_s(bytes, l.tp, link);
    const double scatter = reduce_scatter_s(bytes, l.tp, link);
    t.forward += 4.0 * gather + scatter;
    t.backward += 5.0 * gather + 3.0 * scatter;
  } else {
    t.forward += reduce;
    t.backward += 3.0 * reduce;
  }
  return t;
}

double loss_tp_s(const StageShape& s, const Layout& l, const Link& link) {
  // The logits' maximum, the sum of their exponentials and the target's logit.
  return 3.0 * all_reduce_s(s.tokens * s.b.activation, l.tp, link);
}

double tp_drift_s(const Cluster& c, int tp, double compute) {
  if (c.sync_fraction <= 0 || compute <= 0) return 0;
  // Between two collectives the ranks' compute drifts apart by a share of its length, and
  // each collective waits for the last rank, as much later as the last of tp is.
  return c.sync_fraction * compute * expected_max_of_normals(tp) / expected_max_of_normals(2);
}

TpTime micro_batch_tp(const StageShape& s, const Layout& l, const Cluster& c,
                      const ComputeTime& compute) {
  TpTime t;
  if (l.tp <= 1) return t;
  TpCounts fwd, bwd;
  tp_counts(s.m, l, s.first, s.last, s.layers - s.moe, fwd, bwd);
  const Link link = link_for(c, l, Dim::kTp);
  const double bytes = s.tokens * s.h * s.b.activation;
  t.forward = tp_seconds(fwd, bytes, l.tp, link);
  t.seconds = t.forward + tp_seconds(bwd, bytes, l.tp, link);
  if (s.moe > 0) {
    const PassSeconds moe = moe_layer_tp(s, l, link);
    t.forward += s.moe * moe.forward;
    t.seconds += s.moe * (moe.forward + moe.backward + (s.passes - 1.0) * moe.forward);
  }
  if (s.last) {
    const double loss = loss_tp_s(s, l, link);
    t.seconds += loss;
    t.forward += loss;
  }
  const double drift = tp_drift_s(c, l.tp, compute.compute);
  if (drift > 0) {
    t.seconds += drift;
    t.forward += drift * compute.forward / compute.compute;
  }
  return t;
}

Traffic micro_batch_all_to_all(const StageShape& s, const Layout& l, const Cluster& c) {
  Traffic t;
  if (s.moe <= 0 || l.ep <= 1) return t;
  // Every tp rank exchanges its own copy of the rows.
  const Link link = link_for(c, l, Dim::kEp);
  const double rows = s.tokens * static_cast<double>(s.m.moe_top_k) * s.h * s.b.activation;
  const double counts = static_cast<double>(s.m.moe_experts) * 8.0;
  t.seconds = s.moe * ((s.passes * 2.0 + 2.0) * all_to_all_s(rows, l.ep, link) +
                       s.passes * all_to_all_s(counts, l.ep, link));
  t.bytes = s.moe * ((s.passes * 2.0 + 2.0) * rows + s.passes * counts) * (s.ep - 1.0) / s.ep;
  return t;
}

double expert_wait_s(const StageShape& s, const Layout& l) {
  if (s.moe <= 0 || l.ep <= 1) return 0;
  // The outputs' all-to-all (and backward's) waits for the experts' forward and backward.
  const double expert_s = (2.0 + s.passes) * s.expert_flops / s.expert_rate;
  return s.contention * expert_imbalance(s.m.moe_load_cv, s.m.moe_experts, l.ep) * expert_s;
}

Traffic micro_batch_ring(const StageShape& s, const Layout& l, const Cluster& c) {
  Traffic t;
  if (l.cp <= 1) return t;
  // Keys and values (the kv heads) go cp - 1 steps forward, and in backward again with
  // their gradients, which take cp steps home. Each transfer is posted before a half
  // block's products (forward 2 s'^2 h / t FLOPs, backward's five products 2.5 times that)
  // and hides behind them as far as the machine overlaps (dp_overlap); the gradients' last
  // step has nothing left to hide behind.
  const Link link = link_for(c, l, Dim::kCp);
  const double kv =
      2.0 * s.tokens * s.kv_heads * (s.h / static_cast<double>(s.m.heads)) / l.tp * s.b.activation;
  const double half_block = s.tokens * 2.0 * s.sl * s.h / l.tp / s.rate;
  const double x = send_s(kv, link);
  // A measured ring_sync_us is a transfer's whole wait beyond its message: nothing more hides.
  const double overlap = c.ring_sync_us > 0 ? 0.0 : c.dp_overlap;
  const double exposed_fwd = x - overlap * std::min(x, half_block);
  const double exposed_bwd = x - overlap * std::min(x, 2.5 * half_block);
  t.seconds = s.contention * s.layers *
              (s.passes * (s.cp - 1.0) * exposed_fwd + (2.0 * s.cp - 2.0) * exposed_bwd + x);
  t.bytes = s.layers * (s.passes * (s.cp - 1.0) + (s.cp - 1.0) + s.cp) * kv;
  return t;
}

MicroBatchTime micro_batch_time(const PlanModel& whole, const Layout& l, const Cluster& c,
                                int stage, int chunks) {
  const StageShape s = stage_shape(whole, l, c, stage, chunks);
  const ComputeTime compute = micro_batch_compute(whole, s, l, c);
  MicroBatchTime t;
  t.compute = compute.compute;
  t.forward = compute.forward;
  t.backward = compute.backward;
  t.flops = compute.flops;
  const Traffic all_to_all = micro_batch_all_to_all(s, l, c);
  t.ep = all_to_all.seconds + expert_wait_s(s, l);
  t.ep_bytes = all_to_all.bytes;
  const Traffic ring = micro_batch_ring(s, l, c);
  t.cp = ring.seconds;
  t.cp_bytes = ring.bytes;
  const TpTime tp = micro_batch_tp(s, l, c, compute);
  t.tp = tp.seconds;
  t.tp_forward = tp.forward;
  return t;
}

}  // namespace trident::plan
