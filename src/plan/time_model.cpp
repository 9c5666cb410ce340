// The collectives' costs over a link, and which link each dimension's groups cross by the
// rank order (a step's parts: stage_time.cpp, step_parts.cpp).
#include "plan/time_model.h"

#include <algorithm>   // std::max, std::min
#include <cmath>       // std::log, std::exp, std::erfc, std::sqrt
#include <functional>  // std::function
#include <iterator>    // std::prev
#include <map>         // std::map
#include <set>         // std::set
#include <vector>      // std::vector

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

}  // namespace trident::plan
