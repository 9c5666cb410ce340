// A calibration round: compute figures, then the raw link, then training's collectives
// through the communicator between pairs of ranks.
#include "plan/calibrate/measure.h"

#include <ATen/ATen.h>  // at::kFloat, at::kDouble

#include <algorithm>  // std::max, std::min
#include <cstdio>     // std::snprintf
#include <map>        // std::map
#include <memory>     // std::unique_ptr

#include "parallel/communicator.h"   // Communicator::split
#include "plan/calibrate/compute.h"  // matmul_tflops, block_s, stage_s, ...
#include "plan/calibrate/disk.h"     // disk_bandwidth
#include "plan/calibrate/links.h"    // sendrecv_s, communicator_all_reduce_s
#include "plan/time_model.h"         // Link, all_reduce_s

namespace trident::calibrate {

namespace {

/// The groups calibration makes wait at most this long (seconds) for each other.
constexpr double kTimeoutS = 600;

}  // namespace

plan::Cluster measure_once(Communicator& world, int cores, const Say& say,
                           const std::string& disk_dir) {
  const int rank = world.rank(), size = world.size();
  plan::Cluster c;
  c.devices_per_node = size;
  c.cores_per_node = cores;  // more ranks than this on the machine time-share its cores
  c.memory_per_device_gb = mem_total_bytes() / size / 1e9;
  c.usable_memory_fraction = 0.8;  // the OS, MPI and the allocator's slack
  c.efficiency = 1.0;              // the rates below are measured, not peaks
  c.dp_overlap = 0;                // MPI on CPU progresses only inside MPI calls
  char line[160];
  for (const auto& [name, dtype] :
       {std::pair{"fp32", at::kFloat}, std::pair{"fp64", at::kDouble}}) {
    double best = 0;
    for (int64_t n : {32, 64, 128, 256, 512, 1024}) {
      const double tflops = matmul_tflops(n, dtype, world);
      c.matmul_tflops[name][static_cast<int>(n)] = tflops;
      best = std::max(best, tflops);
      std::snprintf(line, sizeof line, "matmul %s %4lld^3: %8.2f GFLOP/s per rank", name,
                    static_cast<long long>(n), tflops * 1e3);
      say(line);
    }
    c.peak_tflops[name] = best;
  }
  c.memory_gbps = memory_gbps(world);
  std::snprintf(line, sizeof line, "stream bandwidth (c = a + b, 64 MB fp32): %.2f GB/s per rank",
                c.memory_gbps);
  say(line);
  if (!disk_dir.empty()) {
    // All ranks at once: a node's devices share its disk, as their tiers would.
    world.barrier()->wait();
    const DiskBandwidth disk = disk_bandwidth(disk_dir, 256LL << 20, 4LL << 20);
    // The tier reads and writes each byte once: the mean of the two rates sets its time.
    c.disk_gbps = (disk.write_gbps + disk.read_gbps) / 2;
    std::snprintf(line, sizeof line,
                  "disk under %s (%s, %s, 256 MiB in 4 MiB blocks): write %.2f, read %.2f GB/s "
                  "per rank",
                  disk_dir.c_str(), disk.backend.c_str(),
                  disk.direct ? "O_DIRECT" : "page cache: O_DIRECT refused", disk.write_gbps,
                  disk.read_gbps);
    say(line);
  }

  // A block so small that its arithmetic is negligible costs the fixed price of its ~40
  // operator calls and their autograd nodes.
  const std::unique_ptr<Communicator> alone = world.split(rank, 0, "self", kTimeoutS);
  const BlockShape tiny{1, 4, 16, 2};
  c.layer_overhead_us = block_s(tiny, *alone, world) * 1e6;
  std::snprintf(line, sizeof line,
                "fixed cost of one layer's forward + backward (operator calls): %.1f us per rank",
                c.layer_overhead_us);
  say(line);
  // And the model's ends: a one-layer stage less its layer.
  c.ends_overhead_us = std::max(0.0, stage_s(tiny, *alone, world) * 1e6 - c.layer_overhead_us);
  std::snprintf(line, sizeof line,
                "fixed cost of the ends (embedding, final norm, head, loss): %.1f us per rank",
                c.ends_overhead_us);
  say(line);
  // What larger blocks take beyond their matmuls and that fixed cost is elementwise work
  // (norms, softmax, GELU, adds), which the planner charges as 6x the activation bytes
  // over an effective rate: measured at three sizes, as caches make small layers faster.
  for (const BlockShape& x :
       {BlockShape{2, 32, 64, 4}, BlockShape{4, 64, 128, 4}, BlockShape{8, 128, 256, 4}}) {
    const double measured = block_s(x, *alone, world), matmuls = block_matmul_s(x, c);
    const double rest = measured - matmuls;
    const double gbps = rest > 0 ? 6.0 * block_activation_bytes(x) / rest / 1e9 : 0;
    std::snprintf(line, sizeof line,
                  "block b%lld s%lld h%lld: %.2f ms, of which matmuls + fixed %.2f ms; "
                  "elementwise at %.2f GB/s effective",
                  static_cast<long long>(x.batch), static_cast<long long>(x.seq),
                  static_cast<long long>(x.hidden), measured * 1e3, matmuls * 1e3, gbps);
    say(line);
    if (gbps > 0) c.elementwise_gbps[block_activation_bytes(x)] = gbps;
  }

  // The raw link: the largest message's rate and the smallest's time.
  double small = 0, large = 0;
  const int64_t largest = 64 << 20;
  for (int64_t bytes = 1 << 10; bytes <= largest; bytes *= 4) {
    const double s = sendrecv_s(bytes, world);
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
  std::snprintf(line, sizeof line,
                "link: %.3f GB/s at 64 MiB, latency %.2f us (one node: inter = intra)",
                c.intra_node_gbps, c.latency_us);
  say(line);

  // Training's collectives go through trident's communicator (non-blocking MPI, polled),
  // between ranks that compute in between and arrive out of step: all-reduces over pairs
  // of ranks, each after 0.5 ms of matmuls, give the message times [sendrecv_us] holds
  // (a 2-rank all-reduce of 2x bytes is two messages of x), so that the planner's
  // collectives cost what training's do.
  if (size % 2 == 0) {
    const std::unique_ptr<Communicator> pair = world.split(rank / 2, rank, "pair", kTimeoutS);
    std::map<double, double> messages;
    const double work = work_s(world);
    const plan::Link raw{bandwidth, c.latency_us * 1e-6, false, &c.sendrecv_seconds};
    for (int64_t bytes = 2 << 10; bytes <= (32 << 20); bytes *= 4) {
      const double s = communicator_all_reduce_s(*pair, bytes, work, world);
      // Never below the raw message: a difference of two noisy timings can undershoot.
      const double half = static_cast<double>(bytes / 2);
      messages[half] = std::max(s / 2, raw.message_s(half));
      std::snprintf(line, sizeof line,
                    "all-reduce over 2 ranks through the communicator, after 0.5 ms of work, "
                    "%9lld B: %10.2f us",
                    static_cast<long long>(bytes), s * 1e6);
      say(line);
    }
    c.sendrecv_seconds = messages;
    // The tiny block again with tp 2: its fixed cost beyond its four all-reduces, which
    // the planner charges separately.
    const plan::Link link{bandwidth, c.latency_us * 1e-6, false, &c.sendrecv_seconds};
    const double reduces =
        4 * plan::all_reduce_s(tiny.batch * tiny.seq * tiny.hidden * 4.0, 2, link);
    const double measured = block_s(tiny, *pair, world);
    c.layer_overhead_tp_us = std::max(c.layer_overhead_us, (measured - reduces) * 1e6);
    std::snprintf(line, sizeof line,
                  "tiny block with tp 2: %.1f us, of which its 4 all-reduces %.1f us: "
                  "layer_overhead_tp_us %.1f",
                  measured * 1e6, reduces * 1e6, c.layer_overhead_tp_us);
    say(line);
  } else {
    say("an odd number of ranks: [sendrecv_us] holds the raw send/receive times");
  }

  return c;
}

plan::Cluster best_of(plan::Cluster a, const plan::Cluster& b) {
  auto keep_max = [](auto& into, const auto& from) {
    for (const auto& [k, v] : from) into[k] = std::max(into.count(k) ? into[k] : v, v);
  };
  auto keep_min = [](auto& into, const auto& from) {
    for (const auto& [k, v] : from) into[k] = std::min(into.count(k) ? into[k] : v, v);
  };
  for (const auto& [precision, table] : b.matmul_tflops)
    keep_max(a.matmul_tflops[precision], table);
  keep_max(a.peak_tflops, b.peak_tflops);
  keep_max(a.elementwise_gbps, b.elementwise_gbps);
  keep_min(a.sendrecv_seconds, b.sendrecv_seconds);
  a.memory_gbps = std::max(a.memory_gbps, b.memory_gbps);
  a.disk_gbps = std::max(a.disk_gbps, b.disk_gbps);
  a.intra_node_gbps = a.inter_node_gbps = std::max(a.intra_node_gbps, b.intra_node_gbps);
  a.latency_us = std::min(a.latency_us, b.latency_us);
  a.layer_overhead_us = std::min(a.layer_overhead_us, b.layer_overhead_us);
  a.layer_overhead_tp_us = std::min(a.layer_overhead_tp_us, b.layer_overhead_tp_us);
  a.ends_overhead_us = std::min(a.ends_overhead_us, b.ends_overhead_us);
  return a;
}

}  // namespace trident::calibrate
