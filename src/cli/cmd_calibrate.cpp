// `trident calibrate`: measures this machine as the planner sees a cluster (matmul rate by
// size and precision, memory bandwidth, MPI bandwidth and latency between ranks) with
// every rank measuring at once, and writes a cluster TOML for it.
#include <ATen/ATen.h>       // at::matmul, at::add_out, tensors
#include <ATen/Parallel.h>   // at::set_num_threads
#include <mpi.h>             // MPI_Sendrecv, MPI_Allreduce, MPI_Wtime

#include <algorithm>  // std::max, std::min
#include <cmath>      // std::sqrt, std::cbrt, std::log, std::exp
#include <fstream>    // std::ifstream, std::ofstream
#include <iostream>   // std::cout
#include <sstream>    // std::ostringstream
#include <thread>     // std::thread::hardware_concurrency
#include <vector>     // std::vector

#include "cli/args.h"          // CommandSpec, parse_args, UsageError
#include "cli/commands.h"      // Argv, cmd_calibrate
#include "parallel/agreement.h"  // run_agreed
#include "plan/cluster.h"       // Cluster, cluster_to_toml
#include "plan/memory_model.h"  // layer_activation_bytes
#include "plan/plan_model.h"    // PlanModel, layer_forward_flops_per_token

namespace trident::cli {

namespace {

const CommandSpec kSpec{
    "calibrate",
    "mpirun -np N trident calibrate [--out FILE] [--threads T] [--name NAME]",
    "Measures this machine with N ranks running at once, as N devices of one node: the\n"
    "matmul rate of fp32 and fp64 square matmuls of several sizes, the memory bandwidth,\n"
    "and the MPI bandwidth and latency between pairs of ranks (MPI_Sendrecv of 1 KiB to\n"
    "64 MiB). Writes a cluster file for `trident plan --cluster` with devices_per_node = N\n"
    "and memory_per_device_gb = MemTotal / N (to FILE, or after the measurements on\n"
    "standard output, where every other line is a comment). Calibrate with the rank\n"
    "count and threads per rank you will train with: ranks sharing cores share them here too.",
    {{"out", "FILE", "write the cluster TOML here"},
     {"threads", "T", "intra-op threads per rank (default: cores / ranks, at least 1)"},
     {"name", "NAME", "the cluster's name in the file (default: here)"}},
    0,
    0};

struct World {
  int rank = 0, size = 1;
};

/// The mean over ranks of each rank's value.
double mean_over_ranks(double v, const World& w) {
  double sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / w.size;
}

/// Seconds per call of `fn`, repeated until `min_s` has passed on every rank (after one
/// warm-up), every rank starting together. The ranks agree on each batch of calls, so a
/// `fn` that talks to another rank makes the same number of calls on both sides.
template <typename F>
double time_per_call(F fn, double min_s) {
  fn();
  MPI_Barrier(MPI_COMM_WORLD);
  int calls = 0, batch = 1;
  const double start = MPI_Wtime();
  double elapsed = 0;
  while (true) {
    for (int i = 0; i < batch; ++i) fn();
    calls += batch;
    const double mine = MPI_Wtime() - start;
    MPI_Allreduce(&mine, &elapsed, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    if (elapsed >= min_s) return mine / calls;
    batch *= 2;
  }
}

/// TFLOP/s of an n x n times n x n matmul in `dtype`, per rank while all run.
double matmul_tflops(int64_t n, at::ScalarType dtype, const World& w) {
  const auto opts = at::TensorOptions().dtype(dtype);
  at::Tensor a = at::randn({n, n}, opts), b = at::randn({n, n}, opts), c = at::empty({n, n}, opts);
  const double s = time_per_call([&] { at::matmul_out(c, a, b); }, 0.3);
  return mean_over_ranks(2.0 * n * n * n / s / 1e12, w);
}

/// GB/s of c = a + b over 64 MB fp32 tensors (three tensors' bytes per call), per rank.
double memory_gbps(const World& w) {
  const int64_t n = 16 << 20;
  at::Tensor a = at::ones({n}), b = at::ones({n}), c = at::empty({n});
  const double s = time_per_call([&] { at::add_out(c, a, b); }, 0.3);
  return mean_over_ranks(3.0 * n * 4 / s / 1e9, w);
}

/// Seconds per MPI_Sendrecv of `bytes` each way with the partner rank (rank ^ 1; itself
/// when it has none), averaged over the ranks.
double sendrecv_s(int64_t bytes, const World& w) {
  std::vector<char> out(static_cast<size_t>(bytes), 1), in(static_cast<size_t>(bytes));
  const int partner = (w.rank ^ 1) < w.size ? (w.rank ^ 1) : w.rank;
  const double s = time_per_call(
      [&] {
        MPI_Sendrecv(out.data(), static_cast<int>(bytes), MPI_BYTE, partner, 7, in.data(),
                     static_cast<int>(bytes), MPI_BYTE, partner, 7, MPI_COMM_WORLD,
                     MPI_STATUS_IGNORE);
      },
      bytes >= (16 << 20) ? 0.5 : 0.2);
  return mean_over_ranks(s, w);
}

/// The shape of a GPT-2 block's input.
struct BlockShape {
  int64_t batch, seq, hidden, heads;
};

/// Seconds of the forward and backward of one GPT-2 block (as models/gpt.cpp computes
/// it, without tp) on `x`, per rank while all run.
double block_s(const BlockShape& shape, const World& w) {
  const int64_t B = shape.batch, T = shape.seq, C = shape.hidden, nh = shape.heads, hd = C / nh;
  auto param = [](std::vector<int64_t> dims) { return at::randn(dims).mul_(0.02).requires_grad_(); };
  at::Tensor ln1w = param({C}), ln1b = param({C}), ln2w = param({C}), ln2b = param({C});
  at::Tensor wqkv = param({3 * C, C}), bqkv = param({3 * C}), wo = param({C, C}), bo = param({C});
  at::Tensor wfc = param({4 * C, C}), bfc = param({4 * C}), wp = param({C, 4 * C}), bp = param({C});
  at::Tensor x = at::randn({B, T, C}).requires_grad_();
  const at::Tensor future = at::ones({T, T}, at::kBool).triu(1);
  auto block = [&] {
    at::Tensor h = at::layer_norm(x, {C}, ln1w, ln1b, 1e-5);
    at::Tensor qkv = at::linear(h, wqkv, bqkv).view({B, T, 3, nh, hd}).permute({2, 0, 3, 1, 4});
    at::Tensor att = at::matmul(qkv[0], qkv[1].transpose(-2, -1)) * (1.0 / std::sqrt(double(hd)));
    att = at::softmax(att.masked_fill(future, -1e9), -1);                   // (B, nh, T, T)
    at::Tensor y = at::matmul(att, qkv[2]).transpose(1, 2).reshape({B, T, C});
    at::Tensor r = x + at::linear(y, wo) + bo;
    at::Tensor m = at::layer_norm(r, {C}, ln2w, ln2b, 1e-5);
    at::Tensor out = r + at::linear(at::gelu(at::linear(m, wfc, bfc), "tanh"), wp) + bp;
    out.sum().backward();
  };
  return mean_over_ranks(time_per_call(block, 0.3), w);
}

/// The planner's prediction for one block's forward and backward on `c` without the
/// elementwise term: matmul FLOPs at the measured rate, plus the fixed overhead.
double block_matmul_s(const BlockShape& x, const plan::Cluster& c) {
  plan::PlanModel m;
  m.hidden = x.hidden;
  m.seq_len = x.seq;
  const double tokens = static_cast<double>(x.batch * x.seq);
  const double h = static_cast<double>(x.hidden);
  const double size = std::cbrt(tokens * h * 4.0 * h);
  return 3.0 * tokens * plan::layer_forward_flops_per_token(m) / c.matmul_flops("fp32", size) +
         c.layer_overhead_us * 1e-6;
}

/// Bytes of activations the block keeps (Korthikanti et al., fp32), what the planner
/// charges elementwise work for.
double block_activation_bytes(const BlockShape& x) {
  return plan::layer_activation_bytes({x.seq, x.batch, x.hidden, x.heads}, 1, false, 4.0);
}

/// MemTotal from /proc/meminfo in bytes, or 0.
double mem_total_bytes() {
  std::ifstream in("/proc/meminfo");
  std::string key;
  double kb = 0;
  while (in >> key >> kb) {
    if (key == "MemTotal:") return kb * 1024;
    in.ignore(1 << 10, '\n');
  }
  return 0;
}

}  // namespace

int cmd_calibrate(const Argv& argv) {
  const Args args = parse_args(kSpec, argv);
  if (args.help) {
    std::cout << help_text(kSpec);
    return 0;
  }
  World w;
  MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
  MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = static_cast<int>(args.get_int("threads", std::max(1, cores / w.size)));
  if (threads < 1) throw UsageError("--threads must be at least 1");
  at::set_num_threads(threads);
  const bool root = w.rank == 0;
  std::ostringstream log;  // the measurements, as comment lines
  auto say = [&](const std::string& line) {
    if (root) std::cout << "# " << line << std::endl;
    log << line << "\n";
  };
  say("calibrating with " + std::to_string(w.size) + " ranks x " + std::to_string(threads) +
      " threads on " + std::to_string(cores) + " cores");

  plan::Cluster c;
  c.name = args.get("name", "here");
  c.devices_per_node = w.size;
  c.memory_per_device_gb = mem_total_bytes() / w.size / 1e9;
  c.usable_memory_fraction = 0.8;  // the OS, MPI and the allocator's slack
  c.efficiency = 1.0;              // the rates below are measured, not peaks
  c.dp_overlap = 0;                // MPI on CPU progresses only inside MPI calls
  char line[160];
  for (const auto& [name, dtype] : {std::pair{"fp32", at::kFloat}, std::pair{"fp64", at::kDouble}}) {
    double best = 0;
    for (int64_t n : {32, 64, 128, 256, 512, 1024}) {
      const double tflops = matmul_tflops(n, dtype, w);
      c.matmul_tflops[name][static_cast<int>(n)] = tflops;
      best = std::max(best, tflops);
      std::snprintf(line, sizeof line, "matmul %s %4lld^3: %8.2f GFLOP/s per rank", name,
                    static_cast<long long>(n), tflops * 1e3);
      say(line);
    }
    c.peak_tflops[name] = best;
  }
  c.memory_gbps = memory_gbps(w);
  std::snprintf(line, sizeof line,
                "stream bandwidth (c = a + b, 64 MB fp32): %.2f GB/s per rank", c.memory_gbps);
  say(line);

  // A block so small that its arithmetic is negligible costs the fixed price of its ~40
  // operator calls and their autograd nodes.
  c.layer_overhead_us = block_s({1, 4, 16, 2}, w) * 1e6;
  std::snprintf(line, sizeof line,
                "fixed cost of one layer's forward + backward (operator calls): %.1f us per rank",
                c.layer_overhead_us);
  say(line);
  // What larger blocks take beyond their matmuls and that fixed cost is elementwise work
  // (norms, softmax, GELU, adds), which the planner charges as 6x the activation bytes
  // over memory_gbps: the effective rate, fitted on two block sizes (geometric mean).
  double log_sum = 0;
  int fits = 0;
  for (const BlockShape& x : {BlockShape{4, 64, 128, 4}, BlockShape{8, 128, 256, 4}}) {
    const double measured = block_s(x, w), matmuls = block_matmul_s(x, c);
    const double rest = measured - matmuls;
    const double gbps = rest > 0 ? 6.0 * block_activation_bytes(x) / rest / 1e9 : 0;
    std::snprintf(line, sizeof line,
                  "block b%lld s%lld h%lld: %.2f ms, of which matmuls + fixed %.2f ms; "
                  "elementwise at %.2f GB/s effective",
                  static_cast<long long>(x.batch), static_cast<long long>(x.seq),
                  static_cast<long long>(x.hidden), measured * 1e3, matmuls * 1e3, gbps);
    say(line);
    if (gbps > 0) log_sum += std::log(gbps), ++fits;
  }
  if (fits > 0) c.memory_gbps = std::exp(log_sum / fits);
  std::snprintf(line, sizeof line, "memory_gbps (effective, for elementwise work): %.2f",
                c.memory_gbps);
  say(line);

  // Every size goes into [sendrecv_us] (caches make mid-sized messages faster than large
  // ones); the scalar figures are the largest message's rate and the smallest's time.
  double small = 0, large = 0;
  const int64_t largest = 64 << 20;
  for (int64_t bytes = 1 << 10; bytes <= largest; bytes *= 4) {
    const double s = sendrecv_s(bytes, w);
    c.sendrecv_seconds[static_cast<double>(bytes)] = s;
    if (bytes == 1 << 10) small = s;
    large = s;
    std::snprintf(line, sizeof line, "MPI_Sendrecv %9lld B: %10.2f us, %8.3f GB/s each way",
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

  const std::string toml = plan::cluster_to_toml(
      c, "Measured by `trident calibrate` with " + std::to_string(w.size) + " ranks x " +
             std::to_string(threads) + " threads.\n" + log.str());
  if (!root) return 0;
  if (args.has("out")) {
    std::ofstream out(args.get("out"));
    out << toml;
    if (!out) throw UsageError("--out: cannot write " + args.get("out"));
    std::cout << "# wrote " << args.get("out") << "\n";
  } else {
    std::cout << toml;
  }
  return 0;
}

}  // namespace trident::cli
