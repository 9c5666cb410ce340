// Step time: per-micro-batch compute and tp traffic of the slowest stage, pipeline
// sends and bubble, the exposed part of the dp reduction, the optimizer's pass.
#include "plan/time_model.h"

#include <algorithm>   // std::max, std::min
#include <cmath>       // std::cbrt, std::log, std::exp, std::erfc, std::sqrt
#include <functional>  // std::function
#include <iterator>    // std::prev
#include <map>         // std::map
#include <set>         // std::set
#include <vector>      // std::vector

#include "plan/memory_model.h"     // layer_activation_bytes, head_activation_bytes
#include "plan/shared_pipeline.h"  // shared_pipeline_s, StageWork
#include "plan/tier_model.h"       // tier_traffic, tier_wait_s

namespace trident::plan {

namespace {

/// Message rounds of recursive halving or doubling: ceil(log2 n).
int rounds(int n) {
  int r = 0;
  while ((1 << r) < n) ++r;
  return r;
}

}  // namespace

namespace {

/// Seconds for `bytes` in a table of measured seconds by message bytes: log(time)
/// interpolated in log(size); below the table the smallest message's time (the latency
/// floor), above it the largest message's rate.
double interpolated_s(const std::map<double, double>& t, double bytes) {
  if (bytes <= t.begin()->first) return t.begin()->second;
  if (bytes >= t.rbegin()->first) return t.rbegin()->second * bytes / t.rbegin()->first;
  auto hi = t.lower_bound(bytes);
  auto lo = std::prev(hi);
  const double x =
      (std::log(bytes) - std::log(lo->first)) / (std::log(hi->first) - std::log(lo->first));
  return std::exp(std::log(lo->second) + x * (std::log(hi->second) - std::log(lo->second)));
}

}  // namespace

double Link::message_s(double bytes) const {
  if (!measured || measured->empty()) return bytes / bytes_per_s + latency_s;
  return interpolated_s(*measured, bytes);
}

double Link::exchange_s(double bytes) const {
  if (!measured_exchange || measured_exchange->empty()) return message_s(bytes);
  return interpolated_s(*measured_exchange, bytes);
}

double Link::ring_step_s(double bytes) const {
  const double exchange = exchange_s(bytes);
  if (node_streams <= 0) return exchange;  // each device has its own link
  const double k = std::max(ring_streams, 1), p = node_streams;
  if (!measured_ring || measured_ring->empty()) return exchange * k / p;
  const double one = interpolated_s(*measured_ring, bytes);
  return p > 1 ? one + (k - 1) / (p - 1) * (exchange - one) : one;
}

double Link::round_message_s(double bytes, int k) const {
  if (within && k < static_cast<int>(round_crosses.size()) && !round_crosses[k])
    return within->message_s(bytes);
  return message_s(bytes);
}

double send_s(double bytes, const Link& link) {
  return link.message_s(bytes * link.send_share) + link.sync_s;
}

namespace {

double reduce_scatter_rounds_s(double bytes, int n, const Link& link) {
  const double ring = (n - 1) * link.ring_step_s(bytes / n);
  if (link.collectives == Collectives::kMpi) return ring;  // trident's own ring
  // Recursive halving: partners n/2 apart exchange half the buffer, then n/4 apart a
  // quarter, ...: round r has partners 2^(R-1-r) apart.
  double halving = 0, part = bytes;
  for (int r = 0; r < rounds(n); ++r) halving += link.round_message_s(part /= 2, rounds(n) - 1 - r);
  return std::min(ring, halving);
}

/// The binomial reduce and broadcast of `bytes` over n members, round by round: a round
/// takes as long as its slowest message, inside a node or across (the messages leaving
/// one node together sharing its link).
double binomial_all_reduce_s(double bytes, int n, const Link& link) {
  if (link.binomial_n != n || link.binomial.empty()) return 2.0 * rounds(n) * link.message_s(bytes);
  const Link& inside = link.within ? *link.within : link;
  double total = 0;
  for (const BinomialRound& r : link.binomial) {
    double round = r.inside ? inside.message_s(bytes) : 0.0;
    if (r.leaving > 0) {
      const double share =
          link.node_streams > 0 ? static_cast<double>(r.leaving) / link.node_streams : 1.0;
      round = std::max(round, link.message_s(bytes * share));
    }
    total += round;
  }
  return total;
}

}  // namespace

double reduce_scatter_s(double bytes, int n, const Link& link) {
  if (n <= 1) return 0;
  return reduce_scatter_rounds_s(bytes, n, link) + link.sync_s;
}

double all_gather_s(double bytes, int n, const Link& link) {
  if (n <= 1) return 0;
  if (link.collectives != Collectives::kMpi || link.gather_streams <= 0 || link.node_streams <= 0)
    return reduce_scatter_s(bytes, n, link);
  // libnbc's linear all-gather: every part to every other member at once. The parts that
  // cross share the node's link, gather_streams of them where the table timed
  // node_streams: an exchange of that share of the bytes (as binomial rounds and pipeline
  // sends share it); each member takes in n - 1 parts, at least at the node's own rate.
  const double part = bytes / n;
  const Link& inside = link.within ? *link.within : link;
  const double across =
      link.exchange_s(part * link.gather_streams / static_cast<double>(link.node_streams));
  return std::max(across, (n - 1) * inside.message_s(part)) + link.sync_s;
}

double all_reduce_s(double bytes, int n, const Link& link) {
  if (n <= 1) return 0;
  if (link.collectives == Collectives::kMpi)
    return binomial_all_reduce_s(bytes, n, link) + link.sync_s;
  double doubling = 0;  // partners 1, 2, 4, ... apart, the whole buffer each round
  for (int k = 0; k < rounds(n); ++k) doubling += link.round_message_s(bytes, k);
  return std::min(2.0 * reduce_scatter_rounds_s(bytes, n, link), doubling) + link.sync_s;
}

double expected_max_of_normals(int n) {
  if (n <= 1) return 0;
  if (n == 2) return 1.0 / std::sqrt(M_PI);
  // Blom: the inverse normal CDF at (n - 0.375) / (n + 0.25), by bisection on erfc.
  const double p = (n - 0.375) / (n + 0.25);
  double lo = 0, hi = 10;
  for (int i = 0; i < 100; ++i) {
    const double mid = (lo + hi) / 2;
    if (1.0 - 0.5 * std::erfc(mid / std::sqrt(2.0)) < p) {
      lo = mid;
    } else {
      hi = mid;
    }
  }
  return (lo + hi) / 2;
}

double expert_imbalance(double load_cv, int64_t experts, int ep) {
  if (ep <= 1 || experts <= 0) return 0;
  const double per_rank = static_cast<double>(experts) / ep;
  return load_cv / std::sqrt(per_rank) * expected_max_of_normals(ep);
}

double all_to_all_s(double bytes, int n, const Link& link) {
  if (n <= 1) return 0;
  return (n - 1) * link.exchange_s(bytes / n) + link.sync_s;
}

namespace {

/// The members of each group of `dim`.
int group_size(const Layout& l, Dim dim) {
  switch (dim) {
    case Dim::kTp:
      return l.tp;
    case Dim::kDp:
      return l.replicas();
    case Dim::kCp:
      return std::max(l.cp, 1);
    case Dim::kEp:
      return std::max(l.ep, 1);
    case Dim::kExpertDp:
      return l.expert_dp();
    default:
      return l.pp;
  }
}

/// Calls `f` with the nodes of each group of `dim`, in member order. Ranks are numbered
/// rank = tp_rank + tp * (replica + dp * cp * pp_rank); each group varies one coordinate
/// (kCp, kEp and kExpertDp a part of the replica's).
void for_each_group(const Layout& l, Dim dim, int devices_per_node, bool cyclic,
                    const std::function<void(const std::vector<int>&)>& f) {
  const int per_node = std::max(devices_per_node, 1);
  const int nodes = (l.world() + per_node - 1) / per_node;
  auto node_of = [&](int r) { return cyclic ? r % nodes : r / per_node; };
  const int replicas = l.replicas();
  auto rank = [&](int t, int d, int p) { return t + l.tp * (d + replicas * p); };
  const int n = group_size(l, dim);
  std::vector<int> on(static_cast<size_t>(n));
  if (dim == Dim::kEp || dim == Dim::kExpertDp || dim == Dim::kCp) {
    // Within each dp group: n consecutive replicas (cp, ep), or those ep apart.
    const int ep = std::max(l.ep, 1), groups = replicas / n;
    for (int t = 0; t < l.tp; ++t)
      for (int p = 0; p < l.pp; ++p)
        for (int g = 0; g < groups; ++g) {
          for (int i = 0; i < n; ++i)
            on[static_cast<size_t>(i)] =
                node_of(rank(t, dim == Dim::kExpertDp ? i * ep + g : g * n + i, p));
          f(on);
        }
    return;
  }
  for (int a = 0; a < (dim == Dim::kTp ? replicas : l.tp); ++a) {
    for (int b = 0; b < (dim == Dim::kPp ? replicas : l.pp); ++b) {
      for (int i = 0; i < n; ++i) {
        const int r = dim == Dim::kTp   ? rank(i, a, b)
                      : dim == Dim::kDp ? rank(a, i, b)
                                        : rank(a, b, i);
        on[static_cast<size_t>(i)] = node_of(r);
      }
      f(on);
    }
  }
}

/// Per round k of recursive halving or doubling: whether some group of `dim` has members
/// 2^k apart (index i and i xor 2^k) on different nodes.
std::vector<bool> round_crossings(const Layout& l, Dim dim, int devices_per_node, bool cyclic) {
  const int n = group_size(l, dim);
  std::vector<bool> crosses(static_cast<size_t>(rounds(n)), false);
  for_each_group(l, dim, devices_per_node, cyclic, [&](const std::vector<int>& on) {
    for (int k = 0; k < rounds(n); ++k)
      for (int i = 0; i < n; ++i) {
        const int j = i ^ (1 << k);
        if (j < n && on[i] != on[j]) crosses[k] = true;
      }
  });
  return crosses;
}

/// The rounds of a binomial all-reduce (member 0 the root, as libnbc's) over the groups
/// of `dim`: reduce round r = 1 .. R, member i with i mod 2^r = 2^(r-1) sends to
/// i - 2^(r-1); broadcast round r = 0 .. R-1, member i < 2^r sends to i + 2^r. A round's
/// messages leaving a node are counted over every group of the dimension, which run their
/// collectives at about the same moments: the dp replicas of a stage in step, and the
/// stages of a pipeline, busy at once in its steady state, often enough (measured on
/// emulated nodes: tp pairs of two replicas, or of two stages, dealt across the link take
/// about the time of both messages at once per round).
std::vector<BinomialRound> binomial_rounds(const Layout& l, Dim dim, int devices_per_node,
                                           bool cyclic) {
  const int n = group_size(l, dim);
  const int R = rounds(n);
  std::vector<BinomialRound> out(static_cast<size_t>(2 * R));
  std::vector<std::map<int, int>> leaving(out.size());  // by round: node -> messages
  for_each_group(l, dim, devices_per_node, cyclic, [&](const std::vector<int>& on) {
    auto message = [&](size_t round, int from, int to) {
      if (on[from] == on[to]) {
        out[round].inside = true;
      } else {
        ++leaving[round][on[from]];
      }
    };
    for (int r = 1; r <= R; ++r)
      for (int i = 0; i < n; ++i)
        if (i % (1 << r) == 1 << (r - 1))
          message(static_cast<size_t>(r - 1), i, i - (1 << (r - 1)));
    for (int r = 0; r < R; ++r)
      for (int i = 0; i < (1 << r) && i + (1 << r) < n; ++i)
        message(static_cast<size_t>(R + r), i, i + (1 << r));
  });
  for (size_t k = 0; k < out.size(); ++k)
    for (const auto& [node, count] : leaving[k]) out[k].leaving = std::max(out[k].leaving, count);
  return out;
}

}  // namespace

bool group_crosses_nodes(const Layout& l, Dim dim, int devices_per_node, bool cyclic) {
  bool crosses = false;
  for_each_group(l, dim, devices_per_node, cyclic, [&](const std::vector<int>& on) {
    if (std::set<int>(on.begin(), on.end()).size() > 1) crosses = true;
  });
  return crosses;
}

int ring_streams_leaving_node0(const Layout& l, Dim dim, int devices_per_node, bool cyclic) {
  int streams = 0;
  for_each_group(l, dim, devices_per_node, cyclic, [&](const std::vector<int>& on) {
    const size_t n = on.size();
    for (size_t i = 0; i < n && n > 1; ++i)
      if (on[i] == 0 && on[(i + 1) % n] != 0) ++streams;
  });
  return streams;
}

int gather_streams_leaving_a_node(const Layout& l, Dim dim, int devices_per_node, bool cyclic) {
  std::map<int, int> leaving;  // node -> messages to members on other nodes
  for_each_group(l, dim, devices_per_node, cyclic, [&](const std::vector<int>& on) {
    std::map<int, int> members;  // node -> members of this group there
    for (int node : on) ++members[node];
    const int n = static_cast<int>(on.size());
    for (const auto& [node, here] : members) leaving[node] += here * (n - here);
  });
  int most = 0;
  for (const auto& [node, count] : leaving) most = std::max(most, count);
  return most;
}

int pipeline_streams_leaving_a_node(const Layout& l, int devices_per_node, bool cyclic) {
  // By (boundary between stage i and i + 1, node of stage i's rank): the sends across.
  std::map<std::pair<int, int>, int> streams;
  for_each_group(l, Dim::kPp, devices_per_node, cyclic, [&](const std::vector<int>& on) {
    for (size_t i = 0; i + 1 < on.size(); ++i)
      if (on[i] != on[i + 1]) ++streams[{static_cast<int>(i), on[i]}];
  });
  int most = 0;
  for (const auto& [where, count] : streams) most = std::max(most, count);
  return most;
}

Link link_for(const Cluster& c, const Layout& l, Dim dim) {
  Link link;
  link.inter_node = group_crosses_nodes(l, dim, c.devices_per_node, c.placement == "cyclic");
  link.bytes_per_s = (link.inter_node ? c.inter_node_gbps : c.intra_node_gbps) * 1e9;
  const double inter_latency = c.inter_node_latency_us > 0 ? c.inter_node_latency_us : c.latency_us;
  link.latency_s = (link.inter_node ? inter_latency : c.latency_us) * 1e-6;
  // A ring-attention step waits for its neighbour as calibrated on a ring block
  // (ring_sync_us), else as a collective waits (sync_us).
  link.sync_s = (dim == Dim::kCp && c.ring_sync_us > 0 ? c.ring_sync_us : c.sync_us) * 1e-6;
  if (!link.inter_node && !c.sendrecv_seconds.empty()) link.measured = &c.sendrecv_seconds;
  if (link.inter_node) {
    // Messages one way by the one-way table, a ring's rounds by the exchanges; a file
    // written before [inter_send_us] prices both by its exchanges.
    const auto& one_way =
        c.inter_send_seconds.empty() ? c.inter_sendrecv_seconds : c.inter_send_seconds;
    if (!one_way.empty()) link.measured = &one_way;
    if (!c.inter_sendrecv_seconds.empty()) link.measured_exchange = &c.inter_sendrecv_seconds;
    // Rounds of recursive halving or doubling whose partners share a node stay on the
    // node's own link.
    Link intra;
    intra.bytes_per_s = c.intra_node_gbps * 1e9;
    intra.latency_s = c.latency_us * 1e-6;
    if (!c.sendrecv_seconds.empty()) intra.measured = &c.sendrecv_seconds;
    link.within = std::make_shared<const Link>(intra);
    link.round_crosses = round_crossings(l, dim, c.devices_per_node, c.placement == "cyclic");
  }
  if (link.inter_node && link.measured) {
    // trident calibrate measured with every rank of a node sending across at once.
    const bool cyclic = c.placement == "cyclic";
    link.ring_streams = ring_streams_leaving_node0(l, dim, c.devices_per_node, cyclic);
    link.node_streams = std::max(c.devices_per_node, 1);
    if (!c.inter_ring_seconds.empty()) link.measured_ring = &c.inter_ring_seconds;
    if (dim == Dim::kPp) {
      // The ranks of a stage send to the next stage at once (its dp replicas and tp ranks
      // run in step); those that leave one node share its link.
      const int sending = pipeline_streams_leaving_a_node(l, c.devices_per_node, cyclic);
      link.send_share = static_cast<double>(std::max(sending, 1)) / link.node_streams;
    }
  }
  if (c.collectives == "mpi") {
    link.collectives = Collectives::kMpi;
    link.binomial = binomial_rounds(l, dim, c.devices_per_node, c.placement == "cyclic");
    link.binomial_n = group_size(l, dim);
    if (link.inter_node)
      link.gather_streams =
          gather_streams_leaving_a_node(l, dim, c.devices_per_node, c.placement == "cyclic");
  }
  return link;
}

double ranks_sharing(const Layout& l, const Cluster& c) {
  if (c.machine_cores > 0) return l.world();
  return std::min(l.world(), std::max(c.devices_per_node, 1));
}

double core_share(const Layout& l, const Cluster& c) {
  const int cores = c.machine_cores > 0 ? c.machine_cores : c.cores_per_node;
  if (cores <= 0) return 1;
  return std::max(1.0, ranks_sharing(l, c) / cores);
}

double bubble_fraction(int pp, int64_t m) {
  if (pp <= 1 || m <= 0) return 0;
  return static_cast<double>(pp - 1) / static_cast<double>(m + pp - 1);
}

namespace {

/// One micro-batch on one stage: compute (forward, backward, recompute) and tp traffic.
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

/// The tp collectives of one pass, by kind, each over a whole (tokens x hidden) activation.
struct TpCounts {
  double all_reduce = 0, all_gather = 0, reduce_scatter = 0;
  TpCounts& operator+=(const TpCounts& o) {
    all_reduce += o.all_reduce;
    all_gather += o.all_gather;
    reduce_scatter += o.reduce_scatter;
    return *this;
  }
};

/// What trident's tp layers issue for one micro-batch on one stage (tensor_parallel/):
/// a column-parallel linear (GPT-2: qkv and fc; Llama: q, k, v, gate and up, each its
/// own) all-reduces its input's gradient in backward; a row-parallel one (the attention
/// and MLP projections) all-reduces its output in forward. With sequence parallelism a
/// column-parallel linear all-gathers its input in forward and again in backward and
/// reduce-scatters its input's gradient; a row-parallel one reduce-scatters its output
/// and all-gathers the gradient. The vocabulary-parallel embedding reduces its output
/// (reduce-scatters it, with sequence parallelism), the head takes its input like a
/// column-parallel layer. Full recomputation runs each forward again in backward.
void tp_counts(const PlanModel& m, const Layout& l, bool first, bool last, double layers,
               TpCounts& forward, TpCounts& backward) {
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

/// `stage` counts the pipeline's stages, or with `chunks` model chunks a rank (interleaved
/// 1F1B) its virtual stages: chunk * pp + stage, each 1/chunks of a stage's layers.
MicroBatchTime micro_batch_time(const PlanModel& whole, const Layout& l, const Cluster& c,
                                int stage, int chunks = 1) {
  const PlanModel m = rank_tokens(whole, l);  // with context parallelism, this rank's tokens
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  const int stages = l.pp * chunks;
  const bool first = stage == 0, last = stage == stages - 1;
  const double tokens = static_cast<double>(m.seq_len * l.micro_batch);
  const int64_t stage_layers = m.layers / stages;
  const double layers = static_cast<double>(stage_layers);
  const double moe = static_cast<double>(m.moe_layers_in(stage * stage_layers, stage_layers));
  const double h = static_cast<double>(m.hidden);
  // The routed experts' matmuls apart: each expert multiplies only its own rows, about
  // tokens k ep / E of them (the ep group's tokens), at the rate of that smaller matmul.
  const double ep = static_cast<double>(std::max(l.ep, 1));
  const double expert_rows =
      moe > 0 ? tokens * static_cast<double>(m.moe_top_k) * ep / static_cast<double>(m.moe_experts)
              : 0.0;
  const double expert_flops = moe * tokens * static_cast<double>(m.moe_top_k) * 2.0 *
                              static_cast<double>(m.expert_params()) / l.tp;
  double forward =
      tokens * layers_forward_flops_per_token(m, stage * stage_layers, stage_layers) / l.tp -
      expert_flops;
  if (last) forward += tokens * head_forward_flops_per_token(m, l.tp) / l.tp;
  // Ring attention (context parallelism): each rank's queries meet its own keys in one
  // masked s' x s' block (s' = s / cp, counted above) and each other rank's in a half
  // block: (cp + 1) / 2 blocks' products, 4 s' h / t FLOPs a token each.
  const double sl = static_cast<double>(m.seq_len), cp = static_cast<double>(l.cp);
  const double ring_blocks = (cp + 1.0) / 2.0;
  // The heads whose keys and values the ring moves and sums (a Llama's kv heads).
  const double kv_heads = static_cast<double>(m.llama && m.kv_heads > 0 ? m.kv_heads : m.heads);
  if (l.cp > 1) forward += tokens * layers * 4.0 * sl * h / l.tp * (ring_blocks - 1.0);
  // The rate of the stage's largest matmul, (tokens x h) times (h x 4h/tp).
  const double size = std::cbrt(tokens * h * 4.0 * h / l.tp);
  const double rate = c.matmul_flops(m.precision, size);
  const double expert_rate =
      moe > 0
          ? c.matmul_flops(m.precision,
                           std::cbrt(expert_rows * h * static_cast<double>(m.expert_ffn()) / l.tp))
          : rate;
  const double forward_s = forward / rate + expert_flops / expert_rate;
  forward += expert_flops;
  // Forward and backward (twice the forward); recomputation comes on top.
  double base = 3.0 * forward_s;
  double recompute_flops = l.checkpointing ? forward : 0.0;
  double recompute = l.checkpointing ? forward_s : 0.0;
  const ActivationShape shape = activation_shape(m, l.micro_batch);
  ActivationOptions options;
  options.tp = l.tp;
  options.sequence_parallel = l.sequence_parallel;
  const double dense_act = layer_activation_bytes(shape, options, b.activation);
  const double moe_act = moe > 0 ? moe_layer_activation_bytes(shape, options, b.activation) : 0.0;
  // A layer's activations on average over the stage's dense and MoE layers.
  const double layer_act = ((layers - moe) * dense_act + moe * moe_act) / layers;
  const double stream = c.elementwise_bytes_per_s(layer_act, m.llama);
  if ((l.selective || l.cp > 1) && !l.checkpointing) {
    // Attention's core runs again in backward: its two (s x s) products, 2 * 2 * s * h
    // FLOPs a token, and the softmax over the scores it rebuilds. Ring attention rebuilds
    // each block's scores in its backward too.
    const double core_flops =
        tokens * layers * 4.0 * sl * h / l.tp * (l.cp > 1 ? ring_blocks : 1.0);
    recompute_flops += core_flops;
    recompute += core_flops / rate;
    if (stream > 0 && l.cp == 1) {
      options.recompute = Recompute::kSelective;
      const double core_act = layer_act - layer_activation_bytes(shape, options, b.activation);
      recompute += 2.0 * layers * core_act / stream;
    }
  }
  if (stream > 0 && l.cp > 1) {
    // Ring attention's elementwise work is over its blocks' scores, which the activations
    // above do not count (none is kept): (cp + 1) / 2 blocks of s'^2 a token-pairs a
    // layer. Each score goes through what whole attention's do (scale, mask, normalise,
    // exponentiate, and back), so it is charged as whole attention's kept probabilities
    // are below: six passes at the calibrated elementwise rate, which absorbed the rest.
    const double scores = static_cast<double>(l.micro_batch) * static_cast<double>(m.heads) / l.tp *
                          sl * sl * ring_blocks * b.activation;
    base += layers * 6.0 * scores / stream;
    // Beyond the scores, each ring step streams tensors of the output's and the keys' size
    // (models/ring_attention.cpp), E this rank's q or output bytes, K its k (or v) bytes:
    // forward, each block after the diagonal one rescales and adds its rows of the output
    // by the log-sum-exp rule, about 7 E (nine passes over three quarters of the rows, on
    // average); backward, every block fills, copies and adds a fresh key and value gradient
    // (about 10 K) and adds its rows of dq (3 E). With grouped kv heads each block also
    // repeats its keys and values to the query heads (3 E forward, again in backward) and
    // sums their gradients back (2 E).
    const double q_bytes = tokens * h / l.tp * b.activation;                   // E
    const double k_bytes = q_bytes * kv_heads / static_cast<double>(m.heads);  // K
    const double grouped = kv_heads < static_cast<double>(m.heads) ? 1.0 : 0.0;
    const double ring_forward = (cp - 1.0) * 7.0 * q_bytes + cp * grouped * 3.0 * q_bytes;
    const double ring_backward = cp * (10.0 * k_bytes + 3.0 * q_bytes + grouped * 5.0 * q_bytes);
    base += layers * (ring_forward + ring_backward) / stream;
    if (l.checkpointing) recompute += layers * ring_forward / stream;
  }
  if (stream > 0) {
    // Elementwise work (norms, softmax, GELU, residual adds) streams the saved
    // activations: written and read in forward, read and their gradients written and
    // read in backward, about six times their size (two more with the recompute).
    double act = layers * layer_act;
    if (last) act += head_activation_bytes(m, l.micro_batch, l.tp, b.activation);
    base += 6.0 * act / stream;
    if (moe > 0 && l.ep > 1) {
      // Expert parallelism copies each choice's row about six times a pass (the rows
      // concatenated to send, received, gathered per expert, the outputs zero-filled and
      // scattered, received back), read and written; backward does the same twice.
      const double rows = tokens * static_cast<double>(m.moe_top_k) * h * b.activation;
      base += moe * 3.0 * 6.0 * 2.0 * rows / stream;
    }
    if (l.checkpointing) recompute += 2.0 * act / stream;
  }
  // The fixed cost of each layer's operator calls, and of the model's ends (embedding on
  // the first stage; final norm, head and loss on the last), half of it at each end.
  const double overhead_us = c.layer_calls_us(m.llama, l.tp > 1);
  const double ends_us = c.ends_overhead_us > 0 ? c.ends_overhead_us : 2.0 * overhead_us;
  // An MoE layer issues more operator calls than a dense one (about 40 forward): the
  // router's ten, a dozen to pick each of the E experts' rows, weights and combine, five for
  // each local expert's SwiGLU, in place of the dense MLP's five.
  const double E = static_cast<double>(m.moe_experts);
  const double moe_calls = moe > 0 ? (10.0 + 12.0 * E + 5.0 * E / ep - 5.0) / 40.0 : 0.0;
  // Ring attention issues about 20 calls a block (its products, mask, log-sum-exp merge,
  // the posted transfers) for each of the cp blocks, where whole attention issues a few.
  const double ring_calls = l.cp > 1 ? cp * 20.0 / 40.0 : 0.0;
  const double fixed_s = ((layers * (1.0 + ring_calls) + moe * moe_calls) * overhead_us +
                          ((first ? 0.5 : 0.0) + (last ? 0.5 : 0.0)) * ends_us) *
                         1e-6;
  base += fixed_s;
  if (l.checkpointing) recompute += fixed_s / 3.0;
  // Each of the stage's weights costs its bytes every micro-batch, whatever the tokens:
  // packed for the forward's and the input gradient's products, its gradient written and
  // added to the accumulated one (Cluster::weight_gbps). A recomputed forward packs again.
  if (c.weight_gbps > 0) {
    const double weight_bytes =
        static_cast<double>(stage_parameters(whole, stages, l.tp, stage, l.ep)) * b.param;
    const double weights_s = weight_bytes / (c.weight_gbps * 1e9);
    base += weights_s;
    if (l.checkpointing) recompute += weights_s / 6.0;
  }
  // ZB-H1's input half (pipeline/runtime.cpp): the backward's input-gradient chain, its
  // products with the weights (a forward's FLOPs) and every elementwise and operator
  // call of the backward, while the weight half walks the whole graph again for the
  // weights (the input half's chain recomputed on the way): a whole backward. The first
  // stage has no input gradient, so its input half is empty and the weight half all of
  // the backward: docs/performance.md measured B + W at 1.52 whole backwards at pp 2.
  if (m.schedule == "zb-h1" && l.pp > 1 && !first) {
    recompute_flops += forward;
    recompute += forward_s + (base - 3.0 * forward_s) * 2.0 / 3.0;
  }
  // Ranks computing at once on shared cores and memory slow each other down.
  const double contention = c.contention_at(ranks_sharing(l, c));
  MicroBatchTime t;
  t.flops = 3.0 * forward + recompute_flops;
  t.forward = contention * base / 3.0;
  t.backward = contention * base * 2.0 / 3.0;
  t.compute = contention * (base + recompute);
  const double passes = l.checkpointing ? 2.0 : 1.0;  // forwards per micro-batch
  if (moe > 0 && l.ep > 1) {
    // Each MoE layer's forward exchanges the counts, sends each choice's row to its
    // expert's rank and the output back; backward sends both gradients back the same way.
    // Every tp rank exchanges its own copy of the rows.
    const Link link = link_for(c, l, Dim::kEp);
    const double rows = tokens * static_cast<double>(m.moe_top_k) * h * b.activation;
    const double counts = E * 8.0;
    t.ep = moe * ((passes * 2.0 + 2.0) * all_to_all_s(rows, l.ep, link) +
                  passes * all_to_all_s(counts, l.ep, link));
    t.ep_bytes = moe * ((passes * 2.0 + 2.0) * rows + passes * counts) * (ep - 1.0) / ep;
    // The others wait in the all-to-all that returns the outputs (and in backward's) for
    // the rank whose experts got the most rows.
    const double expert_s = (2.0 + passes) * expert_flops / expert_rate;
    t.ep += contention * expert_imbalance(m.moe_load_cv, m.moe_experts, l.ep) * expert_s;
  }
  if (l.cp > 1) {
    // The ring: keys and values (only the kv heads) go cp - 1 steps forward, and in
    // backward again with their gradients, which take cp steps home. Each transfer is
    // posted before a half block's products (forward: 2 s'^2 h / t FLOPs; backward's five
    // products: 2.5 times that) and hides behind them as far as the machine overlaps
    // communication with compute (dp_overlap, calibrated); the gradients' last step has
    // nothing left to hide behind.
    const Link link = link_for(c, l, Dim::kCp);
    const double kv =
        2.0 * tokens * kv_heads * (h / static_cast<double>(m.heads)) / l.tp * b.activation;
    const double half_block = tokens * 2.0 * sl * h / l.tp / rate;
    const double x = send_s(kv, link);
    // A measured ring_sync_us is a transfer's whole wait beyond its message, with whatever
    // hid behind the half blocks already out of it: nothing more hides.
    const double overlap = c.ring_sync_us > 0 ? 0.0 : c.dp_overlap;
    const double exposed_fwd = x - overlap * std::min(x, half_block);
    const double exposed_bwd = x - overlap * std::min(x, 2.5 * half_block);
    t.cp = contention * layers *
           (passes * (cp - 1.0) * exposed_fwd + (2.0 * cp - 2.0) * exposed_bwd + x);
    t.cp_bytes = layers * (passes * (cp - 1.0) + (cp - 1.0) + cp) * kv;
  }
  if (l.tp > 1) {
    TpCounts fwd, bwd;
    tp_counts(m, l, first, last, layers - moe, fwd, bwd);
    const Link link = link_for(c, l, Dim::kTp);
    const double bytes = tokens * h * b.activation;
    t.tp_forward = tp_seconds(fwd, bytes, l.tp, link);
    t.tp = t.tp_forward + tp_seconds(bwd, bytes, l.tp, link);
    if (moe > 0) {
      // An MoE layer: the shared expert's and each local expert's own all-reduces over
      // their rows (down's output forward, gate's and up's input gradients backward), and
      // attention's: q, k and v's input gradients and o's output as all-reduces, or with
      // sequence parallelism as the gathers and reduce-scatters above, with the gather of
      // the sequence before the MoE layer (and of its output's gradient, backward).
      const double shared = m.moe_shared_expert ? 1.0 : 0.0;
      const double local = E / ep;
      const double expert_bytes = expert_rows * h * b.activation;
      const double reduce = all_reduce_s(bytes, l.tp, link);
      double fwd_s = shared * reduce + local * all_reduce_s(expert_bytes, l.tp, link);
      double bwd_s = 2.0 * shared * reduce + 2.0 * local * all_reduce_s(expert_bytes, l.tp, link);
      if (l.sequence_parallel) {
        const double gather = all_gather_s(bytes, l.tp, link);
        const double scatter = reduce_scatter_s(bytes, l.tp, link);
        fwd_s += 4.0 * gather + scatter;
        bwd_s += 5.0 * gather + 3.0 * scatter;
      } else {
        fwd_s += reduce;
        bwd_s += 3.0 * reduce;
      }
      t.tp_forward += moe * fwd_s;
      t.tp += moe * (fwd_s + bwd_s + (passes - 1.0) * fwd_s);
    }
    if (last) {
      // The vocabulary-parallel cross-entropy: the logits' maximum, the sum of their
      // exponentials and the target's logit, a value a token each.
      const double loss = 3.0 * all_reduce_s(tokens * b.activation, l.tp, link);
      t.tp += loss;
      t.tp_forward += loss;
    }
    if (c.sync_fraction > 0 && t.compute > 0) {
      // Between two collectives the tp ranks' compute drifts apart by a share of its length
      // (Cluster::sync_fraction, calibrated on pairs), and each collective waits for the
      // last rank: over the micro-batch, that share of its compute, as much more as the
      // last of tp ranks comes later than the last of two.
      const double drift =
          c.sync_fraction * t.compute * expected_max_of_normals(l.tp) / expected_max_of_normals(2);
      t.tp += drift;
      t.tp_forward += drift * t.forward / t.compute;
    }
  }
  return t;
}

/// The exposed time of one gradient reduction of `seconds`, of which `last_bucket` seconds
/// can only start once backward ends. Of the rest, the part that fits in `window` seconds
/// of backward could hide; `overlap` of it does. The same share calibrate measures
/// (OverlapTiming::overlap): what hid over the shorter of the reduction and the backward.
double exposed(double seconds, double last_bucket, double window, double overlap) {
  const double hideable = std::min(std::max(0.0, seconds - last_bucket), window);
  return seconds - overlap * hideable;
}

}  // namespace

TimeBreakdown step_time(const PlanModel& m, const Layout& l, const Cluster& c) {
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  const int64_t micro_batches = l.micro_batches(m);
  const double mbs = static_cast<double>(micro_batches);
  // The slowest stage sets the pace of the pipeline.
  MicroBatchTime slow = micro_batch_time(m, l, c, 0);
  int64_t psi = stage_parameters(m, l.pp, l.tp, 0, l.ep);
  int64_t experts = stage_expert_parameters(m, l.pp, l.tp, l.ep, 0);
  double mean_compute = slow.compute / l.pp;  // a micro-batch's compute, averaged over stages
  std::vector<StageWork> stages;              // each stage's forward and backward per micro-batch
  auto add_stage = [&](const MicroBatchTime& t) {
    // Waiting on the tp collectives takes no core.
    // Waiting on the ep all-to-alls, as on tp's, counted with the forward (what ZB-H1 and
    // the shared-core simulation cannot hide).
    // The ring's transfers likewise.
    // ZB-H1's weight half is the whole backward; its input half the rest of the
    // micro-batch's compute beyond the forward (with any recomputation, which it runs).
    const bool split = m.schedule == "zb-h1";
    const double rest = t.compute - t.forward;
    stages.push_back({t.forward, split ? t.backward : rest, t.tp_forward + t.ep + t.cp,
                      t.tp - t.tp_forward, split ? rest - t.backward : 0.0});
  };
  add_stage(slow);
  for (int s = 1; s < l.pp; ++s) {
    const MicroBatchTime t = micro_batch_time(m, l, c, s);
    add_stage(t);
    if (t.compute + t.tp + t.ep + t.cp > slow.compute + slow.tp + slow.ep + slow.cp) slow = t;
    const int64_t here = stage_parameters(m, l.pp, l.tp, s, l.ep);
    if (here > psi) {
      psi = here;
      experts = stage_expert_parameters(m, l.pp, l.tp, l.ep, s);
    }
    mean_compute += t.compute / l.pp;
  }
  TimeBreakdown out;
  out.compute = mbs * slow.compute;
  out.tp = mbs * slow.tp;
  out.ep = mbs * slow.ep;
  out.all_to_all_bytes = mbs * slow.ep_bytes;
  out.cp = mbs * slow.cp;
  out.ring_bytes = mbs * slow.cp_bytes;
  out.flops = mbs * slow.flops;
  double pp_per_mb = 0;
  if (l.pp > 1) {
    const Link link = link_for(c, l, Dim::kPp);
    const double bytes =
        static_cast<double>(rank_tokens(m, l).seq_len * l.micro_batch * m.hidden) * b.activation;
    pp_per_mb = 2.0 * send_s(bytes, link);  // the activation forward, its gradient back
    out.pp = mbs * pp_per_mb;
    // The tied embedding's gradient, summed between the first and the last stage.
    const double embedding = static_cast<double>(padded_vocab(m, l.tp) / l.tp * m.hidden);
    out.pp += all_reduce_s(embedding * b.transport, 2, link);
  }
  // Interleaved 1F1B sends each activation once a chunk.
  const bool interleaved = m.schedule == "interleaved-1f1b" && m.virtual_stages > 1;
  if (interleaved) out.pp += (m.virtual_stages - 1.0) * mbs * pp_per_mb;
  double pipeline = out.compute;
  if (l.pp > 1) {
    // The schedule run on the machine's cores (plan/shared_pipeline.h): with a core per
    // rank each stage idles while it waits on the others' passes; with more ranks than
    // cores, other stages run in a stage's fill and drain as far as their dependencies
    // allow. ZB-H1's deferred weight halves fill the cool-down; interleaved 1F1B runs
    // each rank's chunks (the first holding the embedding, the last the head).
    SharedPipeline sim;
    sim.micro_batches = micro_batches;
    sim.schedule = m.schedule == "gpipe"   ? PipelineSchedule::kGpipe
                   : m.schedule == "zb-h1" ? PipelineSchedule::kZbH1
                   : interleaved           ? PipelineSchedule::kInterleaved1F1B
                                           : PipelineSchedule::kOneFOneB;
    if (interleaved) {
      sim.chunks = m.virtual_stages;
      stages.clear();
      for (int v = 0; v < l.pp * m.virtual_stages; ++v)
        add_stage(micro_batch_time(m, l, c, v, m.virtual_stages));
    }
    sim.copies = l.replicas() * l.tp;
    sim.cores = static_cast<double>(l.world()) / core_share(l, c);
    // Every send is charged in out.pp, so the schedule runs without them (with them, a
    // long pipeline's sends hide behind the steady state in the simulation but not in
    // out.pp, and the bubble of its fill and drain came out negative). What the step pays
    // beyond its tp, ep and cp waits is the bubble.
    sim.send_s = 0;
    pipeline = shared_pipeline_s(stages, sim) - out.tp - out.ep - out.cp;
  }
  const double share = core_share(l, c);
  // More ranks than cores: they time-share the cores, so the compute of a step is at
  // least the node's work over its cores.
  if (share > 1) out.compute = std::max(out.compute, share * mbs * mean_compute);
  out.bubble = std::max(0.0, pipeline - out.compute);

  // The gradient reductions (and parameter gathers) of one buffer of `n` elements over a
  // group of `ranks`: the dp buffer over dp, the routed experts' over expert-dp.
  auto reductions = [&](double n, int ranks, const Link& link) {
    if (ranks <= 1 || n <= 0) return 0.0;
    const double grads = n * b.transport;
    const double bucket = std::min(static_cast<double>(m.bucket_size), n) * b.transport;
    const double params = n * b.param;
    if (l.zero == 0)
      return exposed(all_reduce_s(grads, ranks, link), all_reduce_s(bucket, ranks, link),
                     slow.backward, c.all_reduce_overlap_or_dp());
    if (l.zero == 1)
      return exposed(reduce_scatter_s(grads, ranks, link), reduce_scatter_s(bucket, ranks, link),
                     slow.backward, c.dp_overlap) +
             all_gather_s(params, ranks, link);
    // Stages 2 and 3 reduce-scatter every micro-batch's gradients during its backward.
    double t = mbs * exposed(reduce_scatter_s(grads, ranks, link),
                             reduce_scatter_s(bucket, ranks, link), slow.backward, c.dp_overlap);
    if (l.zero == 2) t += all_gather_s(params, ranks, link);
    if (l.zero == 3) {
      // Parameters gathered before each micro-batch's forward, its recomputation and its
      // backward (once per step when layers stay gathered), prefetched behind the
      // previous layer's compute as far as dp_overlap allows.
      const double gather = all_gather_s(params, ranks, link);
      const double gathers =
          m.zero3_reshard_after_forward ? mbs * (l.checkpointing ? 3.0 : 2.0) : 1.0;
      t += gathers *
           exposed(gather, all_gather_s(bucket, ranks, link), slow.backward / 2.0, c.dp_overlap);
    }
    return t;
  };
  const double dense = static_cast<double>(psi - experts);
  if (l.replicas() > 1) out.dp = reductions(dense, l.replicas(), link_for(c, l, Dim::kDp));
  if (experts > 0 && l.expert_dp() > 1)
    out.dp +=
        reductions(static_cast<double>(experts), l.expert_dp(), link_for(c, l, Dim::kExpertDp));
  // One-element collectives every step: the gradient norm over the world, the loss
  // summed over dp and broadcast over pp.
  if (l.world() > 1) {
    Link world = link_for(c, l, Dim::kDp);
    if (!world.inter_node) world = link_for(c, l, Dim::kPp);
    out.dp += all_reduce_s(8.0, l.world(), world) +
              all_reduce_s(8.0, l.replicas(), link_for(c, l, Dim::kDp));
    out.pp += all_gather_s(8.0, l.pp, link_for(c, l, Dim::kPp));
  }
  // The rank's shard of the optimizer's domain: the dp buffer's over dp, the experts'
  // over expert-dp.
  const double shard_elements =
      dense / l.replicas() + static_cast<double>(experts) / std::max(l.expert_dp(), 1);
  if (c.memory_gbps > 0 && l.zero >= 2) {
    // Every micro-batch, stage 2 copies the gradients into bucket buffers (read and
    // write) and adds the reduced shard into its gradient shard (read, read, write).
    const double shard = shard_elements;
    out.dp += std::max(1.0, share) * mbs *
              (2.0 * static_cast<double>(psi) * b.grad + 3.0 * shard * b.grad_shard) /
              (c.memory_gbps * 1e9);
  }
  if (c.memory_gbps > 0) {
    // trident's AdamW (zero/zero_step.cpp) runs as separate tensor operations over its
    // shard in the state dtype: weight decay 2 passes, the scaled gradient 2, each moment
    // 5, the denominator 6, the update 4, the gradient norm 1. Where calibrate timed that
    // update (all but the norm) per element, that time prices it, twice over for fp64's
    // bytes; else its 24 passes at memory_gbps, as if none stayed in cache. 16-bit
    // parameters add the master's rounding (read the master, write the parameter); the
    // gradient buffer is zeroed after.
    const double shard = l.zero == 0 ? static_cast<double>(psi) : shard_elements;
    const double state = m.precision == "fp64" ? 8.0 : 4.0;
    double update_s = 0, bytes = shard * state;  // the norm
    if (c.adamw_ns_per_element > 0)
      update_s = shard * c.adamw_ns_per_element * 1e-9 * (state / 4.0);
    else
      bytes += shard * 24.0 * state;
    if (b.param < state) bytes += shard * (state + b.param);
    bytes += (l.zero < 2 ? static_cast<double>(psi) * b.grad : shard * b.grad_shard);
    out.optimizer = std::max(1.0, share) * c.contention_at(ranks_sharing(l, c)) *
                    (update_s + bytes / (c.memory_gbps * 1e9));
  }
  if (c.disk_read() > 0 && m.offload_optimizer == "nvme") {
    // The tier streams its files through the AdamW step, and stage 3's gathers and the
    // reduced gradients move during forward and backward (docs/offload.md): what exceeds
    // the time each overlaps shows in the step, on the stage that moves the most.
    TierWindows windows;
    windows.optimizer_s = out.optimizer;
    windows.compute_s = out.compute;
    windows.gradient_s = l.replicas() > 1 ? c.dp_overlap * out.compute : out.compute;
    const DiskRates disk{c.disk_read(), c.disk_write(), c.disk_overlap, c.tier_stream_s_per_gb};
    for (int s = 0; s < l.pp; ++s)
      out.tier = std::max(out.tier, tier_wait_s(tier_traffic(m, l, s), disk, windows));
  }
  return out;
}

}  // namespace trident::plan
