// A calibration round: compute figures, then the raw link, then training's collectives
// through the communicator between pairs of ranks.
#include "plan/calibrate/measure.h"

#include <ATen/ATen.h>  // at::kFloat, at::kDouble

#include <algorithm>   // std::max, std::min, std::max_element, std::find, std::stable_sort
#include <cstdio>      // std::snprintf
#include <fstream>     // std::ifstream
#include <functional>  // std::function
#include <map>         // std::map
#include <memory>      // std::unique_ptr
#include <set>         // std::set
#include <string>      // std::string, std::getline, std::stod
#include <utility>     // std::pair
#include <vector>      // std::vector

#include "common/median.h"               // median
#include "parallel/communicator.h"       // Communicator::split
#include "parallel/placement.h"          // node_names
#include "plan/calibrate/compute.h"      // matmul_call, block_step, block_s, stage_s, ...
#include "plan/calibrate/disk.h"         // disk_bandwidth, disk_overlap
#include "plan/calibrate/links.h"        // sendrecv_s, send_s
#include "plan/calibrate/overlap.h"      // overlap_timing
#include "plan/calibrate/tier_stream.h"  // tier_stream
#include "plan/calibrate/timing.h"       // with_others_idle, times_per_call_in_turn
#include "plan/plan_model.h"             // PlanModel (its default bucket)
#include "plan/sync_fit.h"               // SyncPoint, fit_sync
#include "plan/time_model.h"             // Link, all_reduce_s

namespace trident::calibrate {

namespace {

/// This process's resident bytes (VmRSS of /proc/self/status); 0 where it cannot be read.
double resident_bytes() {
  std::ifstream status("/proc/self/status");
  std::string line;
  while (std::getline(status, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stod(line.substr(6)) * 1024.0;  // in kB
  return 0.0;
}

/// The groups calibration makes wait at most this long (seconds) for each other.
constexpr double kTimeoutS = 600;

/// Where the ranks run: each rank's node (by host name, in order of first appearance), its
/// index among its node's ranks, and whether every node is one machine (emulated nodes:
/// the same kernel boot id), whose cores all ranks then share.
struct NodeMap {
  std::vector<int> node, local;
  int nodes = 1, max_ranks_per_node = 1;
  bool one_machine = true;
};

NodeMap node_map(Communicator& world) {
  NodeMap m;
  const std::vector<std::string> names = node_names(world);
  std::map<std::string, int> index, count;
  for (const std::string& name : names) {
    if (!index.count(name)) index.emplace(name, static_cast<int>(index.size()));
    m.node.push_back(index[name]);
    m.local.push_back(count[name]++);
    m.max_ranks_per_node = std::max(m.max_ranks_per_node, count[name]);
  }
  m.nodes = static_cast<int>(index.size());
  std::string boot;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot;
  const std::vector<std::string> boots = world.all_gather_bytes(boot);
  m.one_machine = std::set<std::string>(boots.begin(), boots.end()).size() == 1;
  return m;
}

/// Rank 0's `value` on every rank.
double from_rank0(double value, Communicator& world) {
  at::Tensor t = at::full({1}, value, at::kDouble);
  world.broadcast(t, 0)->wait();
  return t.item<double>();
}

}  // namespace

/// The figures read against each other, measured in turn (times_per_call_in_turn): the
/// matmul table, whose rates the planner interpolates between sizes; the fixed cost of a
/// block, from one so small that its arithmetic is negligible (its ~40 operator calls and
/// their autograd nodes), GPT-2's and Llama's (RMSNorm, RoPE, the kv heads' repeat,
/// SwiGLU's third matrix); and the blocks at three sizes, whose time beyond their matmuls
/// and that fixed cost is elementwise work (norms, softmax, GELU or SwiGLU, RoPE, adds),
/// which the planner charges as 6x the activation bytes over an effective rate: three
/// sizes, as caches make small layers faster, for each block, as their operators stream
/// their activations unalike. Measured one after the other, a slow spell of the machine
/// fell on some sizes and not others and bent the table (a 512 matmul 6% slower than a 256
/// one beside a 1024 one 13% faster), or on the blocks and not the matmuls inside them.
void measure_shapes(Communicator& alone, Communicator& world, plan::Cluster& c, const Say& say,
                    double budget) {
  const std::vector<std::pair<const char*, at::ScalarType>> dtypes = {{"fp32", at::kFloat},
                                                                      {"fp64", at::kDouble}};
  const std::vector<int64_t> sizes = {32, 64, 128, 256, 512, 1024};
  std::vector<BlockShape> blocks;
  for (const bool llama : {false, true})
    for (BlockShape x : {BlockShape{1, 4, 16, 2}, BlockShape{2, 32, 64, 4},
                         BlockShape{4, 64, 128, 4}, BlockShape{8, 128, 256, 4}}) {
      x.llama = llama;
      blocks.push_back(x);
    }
  std::vector<std::function<void()>> calls;
  std::vector<double> min_s;
  for (const auto& [name, dtype] : dtypes)
    for (int64_t n : sizes) {
      calls.push_back(matmul_call(n, dtype));
      min_s.push_back(0.5 * budget);
    }
  for (const BlockShape& x : blocks) {
    calls.push_back(block_step(x, alone));
    min_s.push_back(1.0 * budget);
  }
  const std::vector<double> seconds = times_per_call_in_turn(calls, min_s, world);

  char line[160];
  size_t i = 0;
  for (const auto& [name, dtype] : dtypes) {
    double best = 0;
    for (int64_t n : sizes) {
      const double tflops =
          mean_over_ranks(2.0 * static_cast<double>(n * n * n) / seconds[i++] / 1e12, world);
      c.matmul_tflops[name][static_cast<int>(n)] = tflops;
      best = std::max(best, tflops);
      std::snprintf(line, sizeof line, "matmul %s %4lld^3: %8.2f GFLOP/s per rank", name,
                    static_cast<long long>(n), tflops * 1e3);
      say(line);
    }
    c.peak_tflops[name] = best;
  }
  for (const BlockShape& x : blocks) {
    const double measured = mean_over_ranks(seconds[i++], world);
    if (x.batch == 1) {
      (x.llama ? c.llama_layer_overhead_us : c.layer_overhead_us) = measured * 1e6;
      std::snprintf(line, sizeof line,
                    x.llama ? "fixed cost of one Llama layer's forward + backward: %.1f us per rank"
                            : "fixed cost of one layer's forward + backward (operator calls): "
                              "%.1f us per rank",
                    measured * 1e6);
      say(line);
      continue;
    }
    const double matmuls = block_matmul_s(x, c), rest = measured - matmuls;
    const double gbps = rest > 0 ? 6.0 * block_activation_bytes(x) / rest / 1e9 : 0;
    std::snprintf(line, sizeof line,
                  "%s block b%lld s%lld h%lld: %.2f ms, of which matmuls + fixed %.2f ms; "
                  "elementwise at %.2f GB/s effective",
                  x.llama ? "Llama" : "GPT-2", static_cast<long long>(x.batch),
                  static_cast<long long>(x.seq), static_cast<long long>(x.hidden), measured * 1e3,
                  matmuls * 1e3, gbps);
    say(line);
    if (gbps > 0)
      (x.llama ? c.llama_elementwise_gbps : c.elementwise_gbps)[block_activation_bytes(x)] = gbps;
  }
}

/// The compute figures, measured by every rank of `world` at once (they share the memory
/// system as training's ranks do): matmul rates, memory and disk bandwidth, the fixed and
/// elementwise costs of a block and of the model's ends.
void measure_compute(Communicator& world, plan::Cluster& c, const Say& say,
                     const std::string& disk_dir, double budget) {
  char line[160];
  {
    // What a training process holds beyond its model: measured first, after a tiny
    // block's forward and backward (autograd, the BLAS's buffers), before any large
    // measurement buffer enters the heap, which trident never trims.
    const std::unique_ptr<Communicator> alone = world.split(world.rank(), 0, "self", kTimeoutS);
    block_s(BlockShape{1, 4, 16, 2}, *alone, world, budget);
    c.process_base_gb = resident_bytes() / 1e9;
    std::snprintf(line, sizeof line, "process base (resident after a tiny block): %.0f MB",
                  c.process_base_gb * 1e3);
    say(line);
  }
  c.memory_gbps = memory_gbps(world, budget);
  std::snprintf(line, sizeof line, "stream bandwidth (c = a + b, 64 MB fp32): %.2f GB/s per rank",
                c.memory_gbps);
  say(line);
  c.weight_gbps = weight_gbps(world, budget);
  std::snprintf(line, sizeof line,
                "weights (8 linear layers 1024 x 1024, 16 and 512 tokens): %.2f GB/s per rank "
                "beyond their FLOPs",
                c.weight_gbps);
  say(line);
  c.adamw_ns_per_element = adamw_ns_per_element(world, budget);
  std::snprintf(line, sizeof line,
                "AdamW update (4 Mi fp32 elements, in memory): %.2f ns per element per rank",
                c.adamw_ns_per_element);
  say(line);
  if (!disk_dir.empty()) {
    // All ranks at once: a node's devices share its disk, as their tiers would.
    world.barrier()->wait();
    const DiskBandwidth disk = disk_bandwidth(disk_dir, 256LL << 20, 4LL << 20);
    // The tier reads and writes each byte once: the mean of the two rates sets its time.
    c.disk_gbps = (disk.write_gbps + disk.read_gbps) / 2;
    c.disk_read_gbps = disk.read_gbps;
    c.disk_write_gbps = disk.write_gbps;
    std::snprintf(line, sizeof line,
                  "disk under %s (%s, %s, 256 MiB in 4 MiB blocks): write %.2f, read %.2f GB/s "
                  "per rank",
                  disk_dir.c_str(), disk.backend.c_str(),
                  disk.direct ? "O_DIRECT" : "page cache: O_DIRECT refused", disk.write_gbps,
                  disk.read_gbps);
    say(line);
    // The same passes while every rank computes the middle block, as the tier's
    // transfers run beside forward, backward and the AdamW step.
    const std::unique_ptr<Communicator> self = world.split(world.rank(), 0, "self", kTimeoutS);
    world.barrier()->wait();
    const DiskOverlap overlap = disk_overlap(disk_dir, 128LL << 20, 4LL << 20,
                                             block_step(BlockShape{4, 64, 128, 4}, *self));
    c.disk_overlap = mean_over_ranks(overlap.overlap, world);
    std::snprintf(line, sizeof line,
                  "disk beside a block b4 s64 h128: its passes %.0f ms alone, the block lost "
                  "%.0f ms beside them: disk_overlap %.2f (the ranks' mean)",
                  overlap.io_s * 1e3, overlap.lost_s * 1e3, c.disk_overlap);
    say(line);
    // The tier's own stream through an AdamW step, against the step in memory: what the
    // stream costs beyond its updates, however its reads, writes and updates overlap.
    const TierStream stream = tier_stream(disk_dir, world, budget);
    c.tier_stream_s_per_gb = stream.s_per_gb();
    std::snprintf(line, sizeof line,
                  "AdamW streamed through the tier (%.0f MB read and written): %.1f ms, in memory "
                  "%.1f ms: tier_stream_s_per_gb %.3f",
                  stream.bytes / 1e6, stream.stream_s * 1e3, stream.memory_s * 1e3,
                  c.tier_stream_s_per_gb);
    say(line);
  }

  const std::unique_ptr<Communicator> alone = world.split(world.rank(), 0, "self", kTimeoutS);
  measure_shapes(*alone, world, c, say, budget);
  // And the model's ends: a one-layer stage less its layer.
  c.ends_overhead_us = std::max(
      0.0, stage_s(BlockShape{1, 4, 16, 2}, *alone, world, budget) * 1e6 - c.layer_overhead_us);
  std::snprintf(line, sizeof line,
                "fixed cost of the ends (embedding, final norm, head, loss): %.1f us per rank",
                c.ends_overhead_us);
  say(line);
}

/// Rank 0's cluster on every rank.
plan::Cluster cluster_from_rank0(const plan::Cluster& c, Communicator& world) {
  return plan::parse_cluster(world.broadcast_bytes(plan::cluster_to_toml(c, ""), 0), "calibration");
}

/// The tp block's fixed cost beyond its four all-reduces, from the tiny block at tp 2 on
/// pairs of ranks with a core each (`pair`, every pair of `world` at once): its time less
/// the time its ranks spent inside the all-reduces.
void measure_tp_overhead(Communicator& pair, Communicator& world, plan::Cluster& c, const Say& say,
                         double budget) {
  char line[200];
  const BlockShape tiny{1, 4, 16, 2};
  const TpBlockTiming t = tp_block_timing(tiny, pair, world, budget);
  c.layer_overhead_tp_us = std::max(c.layer_overhead_us, (t.seconds - t.tp_wait_s) * 1e6);
  std::snprintf(line, sizeof line,
                "tiny block with tp 2: %.1f us, of which inside its 4 all-reduces %.1f us: "
                "layer_overhead_tp_us %.1f",
                t.seconds * 1e6, t.tp_wait_s * 1e6, c.layer_overhead_tp_us);
  say(line);
}

/// sync_us and sync_fraction: the middle and the large block at tp 2 on pairs of
/// neighbouring ranks, every rank of the job at once (sharing the cores as training's ranks
/// will). The time a rank spends inside one of a block's four all-reduces beyond the raw
/// messages is the wait for a peer that computed in between and arrived late — or, on
/// shared cores, is not running. Part of that wait is fixed (waking up, being scheduled:
/// sync_us) and part grows with the compute since the previous collective, since the two
/// ranks' compute drifts apart by a share of its length (sync_fraction): plan::fit_sync,
/// the line through the two blocks' (compute per all-reduce, wait beyond the messages).
void measure_sync(Communicator& pair, Communicator& world, double share, plan::Cluster& c,
                  const Say& say, double budget) {
  char line[240];
  plan::Link raw{c.intra_node_gbps * 1e9, c.latency_us * 1e-6, false, &c.sendrecv_seconds};
  raw.collectives = plan::Collectives::kMpi;  // the block's all-reduces: binomial over 2
  auto point = [&](const BlockShape& x) {
    const double message = plan::all_reduce_s(x.batch * x.seq * x.hidden * 4.0, 2, raw);
    const TpBlockTiming t = tp_block_timing(x, pair, world, budget);
    const plan::SyncPoint p{(t.seconds - t.tp_wait_s) / 4,
                            std::max(0.0, t.tp_wait_s / 4 - message)};
    std::snprintf(line, sizeof line,
                  "block b%lld s%lld h%lld with tp 2, %d ranks at once: %.2f ms, inside each of "
                  "its 4 all-reduces %.1f us, of which the messages %.1f us, after %.2f ms of "
                  "compute",
                  static_cast<long long>(x.batch), static_cast<long long>(x.seq),
                  static_cast<long long>(x.hidden), world.size(), t.seconds * 1e3,
                  t.tp_wait_s / 4 * 1e6, message * 1e6, p.segment_s * 1e3);
    say(line);
    return p;
  };
  const plan::SyncPoint mid = point(BlockShape{4, 64, 128, 4});
  const plan::SyncFit fit = plan::fit_sync(mid, point(BlockShape{8, 128, 256, 4}), share);
  c.sync_us = fit.sync_us;
  c.sync_fraction = fit.sync_fraction;
  std::snprintf(line, sizeof line,
                "%.1f ranks per core: sync_us %.1f, sync_fraction %.4f of the compute between "
                "collectives",
                share, c.sync_us, c.sync_fraction);
  say(line);
}

/// ring_sync_us: the middle block's 256 tokens a rank, once as batch 4 of 64 whole
/// sequences and once as batch 8 of 64-token sequences split over neighbouring pairs with
/// ring attention (cp 2), every rank of the job at once. The ring's block takes longer by
/// its extra operator calls (charged apart: half a layer's overhead per ring block, on the
/// ranks' share of the cores) and by the waits of its four transfers (forward one step,
/// backward two and the gradients' way home); each transfer's part beyond its message is
/// ring_sync_us. Its attention does 1.5 of whole attention's 4 quarter blocks, a few percent of
/// the block's FLOPs at this size, not subtracted.
void measure_ring_sync(Communicator& pair, Communicator& alone, Communicator& world, double ranks,
                       double share, plan::Cluster& c, const Say& say, double budget) {
  char line[240];
  const BlockShape whole{4, 64, 128, 4}, split{8, 64, 128, 4};
  const double plain = block_s(whole, alone, world, budget);
  const RingBlockTiming ring = ring_block_timing(split, pair, alone, world, budget);
  plan::Link raw{c.intra_node_gbps * 1e9, c.latency_us * 1e-6, false, &c.sendrecv_seconds};
  const double kv = 2.0 * whole.batch * whole.seq * whole.hidden * 4.0;  // keys and values
  const double transfers = 4.0;
  const double calls = share * c.contention_at(ranks) * c.layer_overhead_us * 1e-6;
  c.ring_sync_us =
      std::max(0.0, (ring.seconds - plain - calls) / transfers - raw.message_s(kv)) * 1e6;
  std::snprintf(line, sizeof line,
                "block b4 s64 h128 with ring attention over pairs, %d ranks at once: %.2f ms "
                "against %.2f ms whole, inside its 4 transfers %.1f us each, of which the "
                "messages %.1f us: ring_sync_us %.1f",
                world.size(), ring.seconds * 1e3, plain * 1e3, ring.cp_wait_s / transfers * 1e6,
                raw.message_s(kv) * 1e6, c.ring_sync_us);
  say(line);
}

/// dp_overlap and all_reduce_overlap: a gradient reduction over every rank of the job (16
/// buckets of trident's default bucket, 1 Mi fp32 elements; fewer across a link so slow
/// that 16 take over twice the block: overlap_timing) beside the large block's
/// forward and backward, every rank computing at once as training's do: trident's
/// reduce-scatter (ZeRO 1-3), a ring of point-to-point messages, and MPI's all-reduce
/// (ZeRO 0). MPI on a CPU moves a non-blocking collective only inside MPI calls, which
/// training makes from each weight's gradient hook, and its copies take the cores the
/// backward runs on: what hides is measured, not assumed (here on one node of 2-8 ranks:
/// the reduce-scatter 0-0.56, the all-reduce 0-0.39, one calibration to the next).
void measure_dp_overlap(Communicator& world, Communicator& alone, plan::Cluster& c, const Say& say,
                        double budget) {
  if (world.size() < 2) return;
  char line[240];
  const BlockShape large{8, 128, 256, 4};
  const int64_t most_buckets = 16, bucket = plan::PlanModel{}.bucket_size;
  for (const bool scatter : {false, true}) {
    const OverlapTiming t =
        overlap_timing(large, most_buckets, bucket, scatter, world, alone, world, budget);
    (scatter ? c.dp_overlap : c.all_reduce_overlap) = t.overlap();
    std::snprintf(line, sizeof line,
                  "%s of %lld MiB over %d ranks beside block b8 s128 h256: block %.2f ms, "
                  "reduction %.2f ms, both %.2f ms: hidden %.2f",
                  scatter ? "reduce-scatter" : "all-reduce",
                  static_cast<long long>(t.buckets * bucket * 4 >> 20), world.size(),
                  t.block_s * 1e3, t.reduce_s * 1e3, t.both_s * 1e3, t.overlap());
    say(line);
  }
}

plan::Cluster measure_once(Communicator& world, int cores, const Say& say,
                           const std::string& disk_dir, double budget) {
  const int rank = world.rank(), size = world.size();
  const NodeMap where = node_map(world);
  plan::Cluster c;
  c.devices_per_node = where.max_ranks_per_node;
  c.collectives = "mpi";  // measured through trident's MPI communicator
  // More ranks than cores time-share them: a node's cores, or on emulated nodes the
  // machine's, which every rank shares.
  const bool emulated = where.nodes > 1 && where.one_machine;
  (emulated ? c.machine_cores : c.cores_per_node) = cores;
  const int sharing = emulated ? size : where.max_ranks_per_node;  // ranks on the same cores
  c.memory_per_device_gb = mem_total_bytes() / sharing / 1e9;
  c.usable_memory_fraction = 0.8;           // the OS, MPI and the allocator's slack
  c.efficiency = 1.0;                       // the rates below are measured, not peaks
  c.dp_overlap = c.all_reduce_overlap = 0;  // measured below with two ranks or more
  // Compute is measured by as many ranks as there are cores (more would time-share them,
  // which the planner models itself, with [contention] below), the others idle.
  const int computing = std::min(sharing, cores);
  {
    const std::unique_ptr<Communicator> busy =
        world.split(rank < computing ? 0 : 1, rank, "computing", kTimeoutS);
    with_others_idle(world, rank < computing,
                     [&] { measure_compute(*busy, c, say, disk_dir, budget); });
    c = cluster_from_rank0(c, world);
  }
  char line[200];
  const std::unique_ptr<Communicator> alone = world.split(rank, 0, "self", kTimeoutS);

  // Contention: the middle block run by the first k ranks at once (the others asleep),
  // over its time with `computing` ranks at once — the condition every compute figure above
  // was measured in — times the k ranks' share of the cores, for k from `computing` up to
  // the ranks that share the cores (node 0's, or every rank on emulated nodes). Fewer ranks
  // than cores are not taken to run faster: the block alone ran 0.8-0.9x its time with two
  // at once, but training one rank alone took 0.95x the step of two. The counts are taken
  // in turn, three passes, and each count's median kept, so that a drift of the machine's
  // speed during the measurement falls on every count alike.
  {
    const BlockShape mid{4, 64, 128, 4};
    std::vector<int> counts;
    for (int k = computing; k <= sharing; k = k * 2 > sharing && k < sharing ? sharing : k * 2)
      counts.push_back(k);
    std::map<int, std::vector<double>> times;
    for (int pass = 0; pass < 3; ++pass)
      for (int k : counts) {
        const std::unique_ptr<Communicator> active =
            world.split(rank < k ? 0 : 1, rank, "contention", kTimeoutS);
        double t = 0;
        with_others_idle(world, rank < k, [&] { t = block_s(mid, *alone, *active, budget); });
        times[k].push_back(from_rank0(t, world));
      }
    const double reference = median(times[computing]);
    for (int k : counts) {
      const double t = median(times[k]);
      const double share = std::max(1.0, static_cast<double>(k) / cores);
      c.contention[k] = t / (reference * share);
      std::snprintf(line, sizeof line,
                    "block b4 s64 h128 with %d ranks at once: %.2f ms, %.2f x with %d at once, "
                    "at %.1f ranks per core: contention %.3f",
                    k, t * 1e3, t / reference, computing, share, c.contention[k]);
      say(line);
    }
  }

  // The raw link within a node: pairs of neighbouring ranks on the same node, all at once.
  double small = 0, large = 0;
  const int64_t largest = 64 << 20;
  const int neighbour = rank ^ 1;
  const int intra_partner =
      neighbour < size && where.node[neighbour] == where.node[rank] ? neighbour : rank;
  for (int64_t bytes = 1 << 10; bytes <= largest; bytes *= 4) {
    const double s = sendrecv_s(bytes, intra_partner, world, world, budget);
    c.sendrecv_seconds[static_cast<double>(bytes)] = s;
    if (bytes == 1 << 10) small = s;
    large = s;
    std::snprintf(line, sizeof line, "sendrecv %9lld B: %10.2f us, %8.3f GB/s each way",
                  static_cast<long long>(bytes), s * 1e6, bytes / s / 1e9);
    say(line);
  }
  const double bandwidth = largest / large;
  c.intra_node_gbps = c.inter_node_gbps = bandwidth / 1e9;
  c.latency_us = std::max(0.0, small - 1024.0 / bandwidth) * 1e6;
  std::snprintf(line, sizeof line, "link within a node: %.3f GB/s at 64 MiB, latency %.2f us",
                c.intra_node_gbps, c.latency_us);
  say(line);

  if (where.nodes > 1) {
    // Between nodes: every rank with the rank of the same index on the neighbouring node
    // (node 2k with 2k + 1; the last of an odd count sits out), all pairs at once, as
    // training's groups that cross put every rank of a node on its link and every rank of
    // the job on the cores (a TCP link's messages cost the cores of both ends). One way
    // (the receiver answers with one byte), as a round of a binomial collective or a
    // pipeline send goes; and as an exchange, as a ring's rounds go. On a shaped link an
    // exchange takes longer (1.4-1.5 times from 256 KiB up on a 1 Gbit/s tbf link): each
    // direction's acknowledgements queue behind the other's data.
    auto counterpart = [&](int of_node) {
      for (int r = 0; r < size; ++r)
        if (where.node[r] == of_node && where.local[r] == where.local[rank]) return r;
      return rank;  // no such node, or no rank of this index on it
    };
    const int partner = counterpart(where.node[rank] ^ 1);
    const bool paired = partner != rank;
    const std::unique_ptr<Communicator> pairs =
        world.split(paired ? 0 : 1, rank, "inter-node", kTimeoutS);
    const int64_t inter_largest = 4 << 20;  // shaped links are slow
    std::map<double, double> one_way, exchange;
    with_others_idle(world, paired, [&] {
      for (int64_t bytes = 1 << 10; bytes <= inter_largest; bytes *= 2) {
        const double b = static_cast<double>(bytes);
        one_way[b] = send_s(bytes, partner, where.node[rank] % 2 == 0, world, *pairs, budget);
        exchange[b] = sendrecv_s(bytes, partner, world, *pairs, budget);
      }
    });
    // Rank 0 measured; a rank that sat out has nothing yet.
    for (int64_t bytes = 1 << 10; bytes <= inter_largest; bytes *= 2) {
      const double b = static_cast<double>(bytes);
      one_way[b] = from_rank0(one_way[b], world);
      exchange[b] = from_rank0(exchange[b], world);
      std::snprintf(line, sizeof line,
                    "between nodes %9lld B: one way %10.2f us (%6.3f GB/s), exchange %10.2f us "
                    "(%6.3f GB/s each way)",
                    static_cast<long long>(bytes), one_way[b] * 1e6, b / one_way[b] / 1e9,
                    exchange[b] * 1e6, b / exchange[b] / 1e9);
      say(line);
    }
    // A ring through the nodes in order, every rank at once: one stream leaves each node
    // (its last rank's, to the next node's first), where the pairs above put all of them
    // on the link; a ring's groups lie between the two.
    std::vector<int> ring(size);
    for (int r = 0; r < size; ++r) ring[r] = r;
    std::stable_sort(ring.begin(), ring.end(), [&](int a, int b) {
      return std::pair{where.node[a], where.local[a]} < std::pair{where.node[b], where.local[b]};
    });
    const int at = static_cast<int>(std::find(ring.begin(), ring.end(), rank) - ring.begin());
    const int next = ring[(at + 1) % size], prev = ring[(at + size - 1) % size];
    std::map<double, double> ring_step;
    for (int64_t bytes = 1 << 10; bytes <= inter_largest; bytes *= 2) {
      const double b = static_cast<double>(bytes);
      ring_step[b] = ring_step_s(bytes, next, prev, world, world, budget);
      std::snprintf(line, sizeof line,
                    "ring through the nodes %9lld B: a step %10.2f us (%6.3f GB/s each way)",
                    static_cast<long long>(bytes), ring_step[b] * 1e6, b / ring_step[b] / 1e9);
      say(line);
    }
    c.inter_send_seconds = one_way;
    c.inter_sendrecv_seconds = exchange;
    c.inter_ring_seconds = ring_step;
    const double inter_bw = static_cast<double>(inter_largest) / one_way.rbegin()->second;
    c.inter_node_gbps = inter_bw / 1e9;
    c.inter_node_latency_us = std::max(0.0, one_way.begin()->second - 1024.0 / inter_bw) * 1e6;
    std::snprintf(line, sizeof line,
                  "link between nodes: %.3f GB/s per rank one way at 4 MiB with %d ranks of a "
                  "node sending at once, latency %.2f us",
                  c.inter_node_gbps, where.max_ranks_per_node, c.inter_node_latency_us);
    say(line);
  }

  measure_dp_overlap(world, *alone, c, say, budget);

  // Training's collectives go through trident's communicator (non-blocking MPI, polled),
  // between ranks that compute in between and so arrive out of step: tp blocks over pairs
  // of neighbouring ranks, as many as there are cores, the others idle.
  const int pairs_computing = computing / 2 * 2;  // neighbours on node 0, one core each
  if (pairs_computing >= 2 && where.node[1] == where.node[0]) {
    const bool in_pair = rank < pairs_computing;
    const std::unique_ptr<Communicator> busy =
        world.split(in_pair ? 0 : 1, rank, "computing pairs", kTimeoutS);
    const std::unique_ptr<Communicator> pair = world.split(rank / 2, rank, "pair", kTimeoutS);
    with_others_idle(world, in_pair, [&] { measure_tp_overhead(*pair, *busy, c, say, budget); });
    c = cluster_from_rank0(c, world);
    // Then every rank, when every rank's neighbour is on its node; else the pairs above.
    bool all_paired = size % 2 == 0;
    for (int r = 0; r + 1 < size && all_paired; r += 2)
      all_paired = where.node[r] == where.node[r + 1];
    const double share = all_paired ? std::max(1.0, static_cast<double>(sharing) / cores) : 1.0;
    with_others_idle(world, all_paired || in_pair, [&] {
      measure_sync(*pair, all_paired ? world : *busy, share, c, say, budget);
      measure_ring_sync(*pair, *alone, all_paired ? world : *busy,
                        all_paired ? sharing : pairs_computing, share, c, say, budget);
    });
    c = cluster_from_rank0(c, world);
  } else {
    say("no two ranks on one node: sync_us, sync_fraction, ring_sync_us and "
        "layer_overhead_tp_us not measured");
  }
  return c;
}

namespace {

/// Each key's median over the tables that have it.
template <typename Key>
std::map<Key, double> median_table(const std::vector<const std::map<Key, double>*>& tables) {
  std::map<Key, std::vector<double>> values;
  for (const auto* t : tables)
    for (const auto& [k, v] : *t) values[k].push_back(v);
  std::map<Key, double> out;
  for (const auto& [k, v] : values) out[k] = median(v);
  return out;
}

}  // namespace

plan::Cluster median_of(const std::vector<plan::Cluster>& rounds) {
  plan::Cluster c = rounds.at(0);
  using plan::Cluster;
  const std::vector<double Cluster::*> figures = {&Cluster::memory_gbps,
                                                  &Cluster::weight_gbps,
                                                  &Cluster::adamw_ns_per_element,
                                                  &Cluster::disk_gbps,
                                                  &Cluster::disk_read_gbps,
                                                  &Cluster::disk_write_gbps,
                                                  &Cluster::disk_overlap,
                                                  &Cluster::intra_node_gbps,
                                                  &Cluster::inter_node_gbps,
                                                  &Cluster::latency_us,
                                                  &Cluster::inter_node_latency_us,
                                                  &Cluster::sync_us,
                                                  &Cluster::sync_fraction,
                                                  &Cluster::ring_sync_us,
                                                  &Cluster::layer_overhead_us,
                                                  &Cluster::llama_layer_overhead_us,
                                                  &Cluster::layer_overhead_tp_us,
                                                  &Cluster::ends_overhead_us,
                                                  &Cluster::dp_overlap,
                                                  &Cluster::all_reduce_overlap};
  for (double Cluster::*field : figures) {
    std::vector<double> v;
    for (const plan::Cluster& r : rounds) v.push_back(r.*field);
    c.*field = median(v);
  }
  // The process base is the smallest measured (0: not measured, as in a device's file): a
  // round measures it in the process the rounds before grew (their measurement buffers
  // stay in the heap, which is never trimmed), so only the first round sees what a
  // training process holds (on 2 ranks here: 182 MB, then 406 MB in the second and third).
  c.process_base_gb = 0;
  for (const plan::Cluster& r : rounds)
    if (r.process_base_gb > 0 && (c.process_base_gb == 0 || r.process_base_gb < c.process_base_gb))
      c.process_base_gb = r.process_base_gb;
  // The tier's stream where it was measured (negative: not measured, as in a file of a
  // calibration without a disk).
  std::vector<double> streams;
  for (const plan::Cluster& r : rounds)
    if (r.tier_stream_s_per_gb >= 0) streams.push_back(r.tier_stream_s_per_gb);
  c.tier_stream_s_per_gb = streams.empty() ? -1.0 : median(streams);
  for (std::map<double, double> plan::Cluster::*table :
       {&plan::Cluster::elementwise_gbps, &plan::Cluster::llama_elementwise_gbps,
        &plan::Cluster::sendrecv_seconds, &plan::Cluster::inter_sendrecv_seconds,
        &plan::Cluster::inter_send_seconds, &plan::Cluster::inter_ring_seconds,
        &plan::Cluster::contention}) {
    std::vector<const std::map<double, double>*> tables;
    for (const plan::Cluster& r : rounds) tables.push_back(&(r.*table));
    c.*table = median_table(tables);
  }
  for (auto& [precision, table] : c.matmul_tflops) {
    std::vector<const std::map<int, double>*> tables;
    for (const plan::Cluster& r : rounds)
      if (r.matmul_tflops.count(precision)) tables.push_back(&r.matmul_tflops.at(precision));
    table = median_table(tables);
  }
  for (auto& [precision, peak] : c.peak_tflops) {
    std::vector<double> v;
    for (const plan::Cluster& r : rounds)
      if (r.peak_tflops.count(precision)) v.push_back(r.peak_tflops.at(precision));
    peak = median(v);
  }
  return c;
}

}  // namespace trident::calibrate
