// Step time of a layout on a cluster: matmul FLOPs over the device's rate, the stage's
// weights each micro-batch, elementwise work and operator calls (docs/planner.md, its step
// time), each collective's bytes over the link it crosses (within or across nodes, from
// the rank order), the pipeline bubble, and how much of the dp reduction hides behind
// backward. Each part of a step is its own function (stage_time.h, step_parts.h).
#pragma once
#include <map>     // std::map
#include <memory>  // std::shared_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "plan/cluster.h"     // Cluster
#include "plan/plan_model.h"  // PlanModel, Layout

namespace trident::plan {

/// How a cluster's collectives are carried out (Cluster::collectives).
enum class Collectives {
  /// NCCL's: the fastest of the textbook algorithms for each size (ring, Rabenseifner,
  /// recursive halving and doubling), as NCCL chooses between ring and tree.
  kNccl,
  /// trident's MPI communicator on Open MPI: an all-reduce is libnbc's in-place
  /// MPI_Iallreduce, a binomial reduce to member 0 then a binomial broadcast, the whole
  /// buffer in each of 2 ceil(log2 n) rounds; reduce-scatter and all-gather are rings.
  kMpi,
};

/// One round of a binomial reduce or broadcast over the groups of a dimension.
struct BinomialRound {
  int leaving = 0;      ///< the most messages of the groups leaving one node at once
  bool inside = false;  ///< some message stays inside its node
};

/// A link: bandwidth one device drives (bytes/s) and the latency per message (s), or a
/// measured time per message size.
struct Link {
  double bytes_per_s = 1e9;
  double latency_s = 0;
  bool inter_node = false;
  /// Measured seconds per message by its bytes (Cluster::sendrecv_us within a node,
  /// inter_send_us one way between nodes); when set, it replaces bytes / bytes_per_s +
  /// latency_s.
  const std::map<double, double>* measured = nullptr;
  /// Measured seconds per exchange, a message each way at once (inter_sendrecv_us), for a
  /// ring's rounds; unset: as message_s.
  const std::map<double, double>* measured_exchange = nullptr;
  double sync_s =
      0;  ///< extra wait once per collective or send (Cluster::sync_us; ring_sync_us for cp)
  /// The ring edges of the dimension's groups that leave node 0 (ring_step_s): the exchange
  /// table between nodes holds the time with all node_streams ranks of a node sending.
  int ring_streams = 0;
  /// Measured seconds of a ring's step with one stream leaving each node
  /// (Cluster::inter_ring_us); unset: a ring's step is the exchange x streams / P.
  const std::map<double, double>* measured_ring = nullptr;
  /// For a link across nodes: per round k of recursive halving or doubling (partners 2^k
  /// apart in the group), whether the partners are on different nodes; a round that
  /// stays inside every node uses `within` instead. Empty: every round uses this link.
  std::vector<bool> round_crosses;
  std::shared_ptr<const Link> within;
  Collectives collectives = Collectives::kNccl;
  /// kMpi: the rounds of a binomial all-reduce over groups of `binomial_n` members (the
  /// reduce's, then the broadcast's); empty: each round one message on this link.
  std::vector<BinomialRound> binomial;
  int binomial_n = 0;
  /// kMpi between nodes: the messages of libnbc's linear all-gather (each member sends its
  /// part to every other at once) that leave the busiest node together, over every group
  /// of the dimension; 0: an all-gather is priced as the ring.
  int gather_streams = 0;
  /// The measured table between nodes timed this many messages leaving a node at once
  /// (its ranks all sending across): k messages leaving together then pass the node's
  /// link like k / node_streams of the table's. 0: each device has its own link.
  int node_streams = 0;
  /// A send passes like a message of this fraction of its bytes: the share of the node's
  /// link its stage's sends across take, of the node_streams the measured table timed
  /// (1 when each device has its own link).
  double send_share = 1;

  /// Seconds of one message of `bytes` to a peer.
  double message_s(double bytes) const;
  /// Seconds of a message each way at once with peers, as in a ring's round.
  double exchange_s(double bytes) const;
  /// Seconds of one step of trident's ring (each member sends to the next while it
  /// receives from the previous) of `bytes`, as the groups' rings share the node's link:
  /// with k = ring_streams of a node's P ranks on it, ring + (k - 1) / (P - 1) x (exchange
  /// - ring) where a ring step was measured, else the exchange x k / P.
  double ring_step_s(double bytes) const;
  /// The same in round k of recursive halving or doubling.
  double round_message_s(double bytes, int k) const;
};

/// One message of `bytes` between two devices. Every collective and send also pays
/// link.sync_s once.
double send_s(double bytes, const Link& link);
/// Reduce-scatter or all-gather of a buffer of `bytes` (whole, before sharding) over n
/// devices: the faster of the ring, n-1 messages of bytes/n (the (n-1)/n * bytes every
/// algorithm moves), and recursive halving / doubling, ceil(log2 n) messages of
/// bytes/2, bytes/4, ... (Thakur, Rabenseifner and Gropp 2005); with MPI, trident's own
/// ring.
double reduce_scatter_s(double bytes, int n, const Link& link);
/// The same for an all-gather, but with MPI across nodes libnbc's linear algorithm: every
/// member's part to every other at once, Link::gather_streams of them leaving a node.
double all_gather_s(double bytes, int n, const Link& link);
/// All-reduce: the faster of a reduce-scatter followed by an all-gather (ring or
/// Rabenseifner: 2 (n-1)/n * bytes on the wire) and recursive doubling, ceil(log2 n)
/// messages of the whole buffer, which wins for small buffers. With kMpi collectives the
/// binomial reduce and broadcast instead (link.binomial), and reduce-scatter and
/// all-gather the ring.
double all_reduce_s(double bytes, int n, const Link& link);
/// All-to-all of `bytes` per device spread evenly over n devices: n - 1 pairwise exchanges
/// of bytes / n (what MPI_Ialltoallv's and NCCL's grouped sends move), and one sync.
double all_to_all_s(double bytes, int n, const Link& link);

/// The expected largest of n independent standard normal draws (0 for n = 1): exact for
/// n = 2 (1 / sqrt(pi)), Blom's approximation otherwise.
double expected_max_of_normals(int n);

/// How much longer than the mean the busiest of ep ranks computes its experts, as a
/// fraction: each rank holds E / ep experts whose loads spread by `load_cv` (standard
/// deviation over mean), so a rank's load spreads by load_cv / sqrt(E / ep), and the
/// busiest of ep is expected_max_of_normals(ep) of those above the mean. 0 at ep 1, where
/// every rank computes every expert on its own tokens.
double expert_imbalance(double load_cv, int64_t experts, int ep);

/// The parallel dimensions whose groups the rank order lays out. kDp: the dp x cp ranks
/// holding the same slice of the model; kCp: cp consecutive ones (ring attention's);
/// kEp: ep consecutive ones (an MoE layer's all-to-all); kExpertDp: those ep apart, which
/// hold the same experts (their gradients' reduction).
enum class Dim { kTp, kDp, kPp, kEp, kExpertDp, kCp };

/// True when some group of `dim` has members on two nodes. Ranks are numbered
/// rank = tp_rank + tp * (replica + dp * cp * pp_rank), replica = cp_rank + cp * dp_rank,
/// and node = rank / devices_per_node
/// (block placement), or with `cyclic` placement rank % nodes over the
/// ceil(world / devices_per_node) nodes the job fills.
bool group_crosses_nodes(const Layout& layout, Dim dim, int devices_per_node, bool cyclic = false);

/// The ring edges (member i to i + 1 of each group of `dim`) that leave node 0 for
/// another node: the streams a ring collective of every group at once puts on the link.
int ring_streams_leaving_node0(const Layout& layout, Dim dim, int devices_per_node, bool cyclic);

/// The messages of a linear all-gather over every group of `dim` at once (each member's
/// part to every other member) that leave the busiest node.
int gather_streams_leaving_a_node(const Layout& layout, Dim dim, int devices_per_node, bool cyclic);

/// The most sends of one pipeline boundary (stage i to i + 1, every dp replica and tp
/// rank at once) that leave one node: the streams the pipeline puts on a node's link.
int pipeline_streams_leaving_a_node(const Layout& layout, int devices_per_node, bool cyclic);

/// The link the collectives of `dim` use: across nodes when any of its groups crosses.
Link link_for(const Cluster& cluster, const Layout& layout, Dim dim);

/// Step time by part, in seconds. total() = compute + tp + ep + cp + pp + dp + bubble +
/// optimizer + tier.
struct TimeBreakdown {
  double compute = 0;  ///< matmuls, weights, elementwise work of the slowest stage, m micro-batches
  double tp = 0;       ///< tp all-reduces, not overlapped
  double ep = 0;       ///< MoE layers' all-to-alls over ep, not overlapped
  double cp = 0;       ///< ring attention's transfers over cp not hidden behind its blocks
  double pp = 0;       ///< activation and gradient sends between stages, not overlapped
  double dp = 0;       ///< the part of the dp gradient reduction and parameter gather exposed
  double bubble = 0;   ///< pipeline fill and drain: (p-1) micro-batch times
  double optimizer = 0;  ///< AdamW over the device's shard (memory-bound), Muon's part
  double tier = 0;       ///< nvme offload: the tier's traffic at the disk's bandwidth beyond
                         ///< the AdamW step and the compute it overlaps (tier_wait_s)

  double flops = 0;             ///< FLOPs the slowest stage's device runs per step (with recompute)
  double all_to_all_bytes = 0;  ///< bytes the slowest stage's device sends in all-to-alls
  double ring_bytes = 0;        ///< bytes the slowest stage's device sends around the cp ring
  double total() const { return compute + tp + ep + cp + pp + dp + bubble + optimizer + tier; }
  /// The bubble's share of the step: (p-1)/(m+p-1) of the pipeline's time.
  double bubble_fraction() const { return total() > 0 ? bubble / total() : 0; }
};

/// The predicted step time of `layout` on `cluster`.
TimeBreakdown step_time(const PlanModel& m, const Layout& layout, const Cluster& cluster);

/// Ranks per core when ranks share CPU cores: world / machine_cores for emulated nodes on
/// one machine, else min(world, devices_per_node) / cores_per_node; at least 1; 1 when
/// cores are not shared.
double core_share(const Layout& layout, const Cluster& cluster);

/// Ranks computing at once on the cores they share: the world on one machine of emulated
/// nodes, a node's ranks otherwise (what Cluster::contention is keyed by).
double ranks_sharing(const Layout& layout, const Cluster& cluster);

/// The 1F1B (and GPipe) bubble fraction: (p-1) / (m+p-1).
double bubble_fraction(int pp, int64_t micro_batches);

}  // namespace trident::plan
