// `trident calibrate`: measures this machine as the planner sees a cluster (matmul rate by
// size and precision, memory bandwidth, MPI bandwidth and latency between ranks) with
// every rank measuring at once, and writes a cluster TOML for it.
#include <ATen/ATen.h>      // at::matmul, at::add_out, tensors
#include <ATen/Parallel.h>  // at::set_num_threads
#include <mpi.h>            // MPI_Sendrecv, MPI_Allreduce, MPI_Wtime

#include <algorithm>   // std::max, std::min
#include <chrono>      // std::chrono::seconds
#include <cmath>       // std::sqrt, std::cbrt, std::log, std::exp
#include <fstream>     // std::ifstream, std::ofstream
#include <functional>  // std::function
#include <iostream>    // std::cout
#include <map>         // std::map
#include <sstream>     // std::ostringstream
#include <thread>      // std::thread::hardware_concurrency
#include <vector>      // std::vector

#include "cli/args.h"                   // Args, UsageError
#include "cli/commands.h"               // cmd_calibrate
#include "models/gpt.h"                 // GptBlock, GptOptions: the layer training runs
#include "parallel/mpi_communicator.h"  // MpiCommunicator: the path training's collectives take
#include "plan/cluster.h"               // Cluster, cluster_to_toml
#include "plan/memory_model.h"          // layer_activation_bytes
#include "plan/plan_model.h"            // PlanModel, layer_forward_flops_per_token
#include "plan/time_model.h"            // Link, all_reduce_s
#include "tensor_parallel/parameter.h"  // ParamRegistry

namespace trident::cli {

namespace {

struct World {
  int rank = 0, size = 1;
};

using Say = std::function<void(const std::string&)>;

/// The mean over ranks of each rank's value.
double mean_over_ranks(double v, const World& w) {
  double sum = 0;
  MPI_Allreduce(&v, &sum, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD);
  return sum / w.size;
}

/// Seconds per call of `fn` over one trial: calls repeated until `min_s` has passed on
/// every rank, every rank starting together. The ranks agree on each batch of calls, so
/// a `fn` that talks to another rank makes the same number of calls on both sides.
template <typename F>
double one_trial(F& fn, double min_s) {
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

/// Seconds per call of `fn` (after one warm-up call): the fastest of five trials of
/// `min_s` / 5 each, so that other work on a shared machine disturbs the figure less.
template <typename F>
double time_per_call(F fn, double min_s) {
  fn();
  double best = one_trial(fn, min_s / 5);
  for (int t = 1; t < 5; ++t) best = std::min(best, one_trial(fn, min_s / 5));
  return best;
}

/// TFLOP/s of an n x n times n x n matmul in `dtype`, per rank while all run.
double matmul_tflops(int64_t n, at::ScalarType dtype, const World& w) {
  const auto opts = at::TensorOptions().dtype(dtype);
  at::Tensor a = at::randn({n, n}, opts), b = at::randn({n, n}, opts), c = at::empty({n, n}, opts);
  const double s = time_per_call([&] { at::matmul_out(c, a, b); }, 0.5);
  return mean_over_ranks(2.0 * n * n * n / s / 1e12, w);
}

/// GB/s of c = a + b over 64 MB fp32 tensors (three tensors' bytes per call), per rank.
double memory_gbps(const World& w) {
  const int64_t n = 16 << 20;
  at::Tensor a = at::ones({n}), b = at::ones({n}), c = at::empty({n});
  const double s = time_per_call([&] { at::add_out(c, a, b); }, 0.5);
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
      bytes >= (16 << 20) ? 1.0 : 0.3);
  return mean_over_ranks(s, w);
}

/// The shape of a GPT-2 block's input.
struct BlockShape {
  int64_t batch, seq, hidden, heads;
};

/// Seconds of the forward and backward of one of trident's GPT-2 blocks (models/gpt.h,
/// the code training runs) on an input of `shape`, its weights sharded over `tp`; per
/// rank while all run.
double block_s(const BlockShape& shape, Communicator& tp, const World& w) {
  GptOptions o;
  o.hidden = shape.hidden;
  o.heads = shape.heads;
  o.seq_len = shape.seq;
  ParamRegistry params(o.seed, tp.rank(), tp.size(), at::kFloat);
  GptBlock block(params, tp, o, 0);
  at::Tensor x = at::randn({shape.batch, shape.seq, shape.hidden}).requires_grad_();  // (B, T, C)
  auto step = [&] { block.forward(x).sum().backward(); };
  return mean_over_ranks(time_per_call(step, 1.0), w);
}

/// Seconds of the forward and backward of a one-layer GptStage (embedding, the block,
/// final norm, tied head, loss) on token ids of `shape` and a 64-token vocabulary,
/// without tp; per rank while all run.
double stage_s(const BlockShape& shape, Communicator& tp, const World& w) {
  GptOptions o;
  o.layers = 1;
  o.hidden = shape.hidden;
  o.heads = shape.heads;
  o.seq_len = shape.seq;
  o.vocab = o.padded_vocab = 64;
  GptStage stage(o, tp, 0, 1);
  const at::Tensor ids = at::randint(o.vocab, {shape.batch, shape.seq + 1}, at::kLong);
  const at::Tensor input = ids.narrow(1, 0, shape.seq), targets = ids.narrow(1, 1, shape.seq);
  auto step = [&] { stage.forward(input, targets, 1.0).backward(); };
  return mean_over_ranks(time_per_call(step, 1.0), w);
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

/// About 0.5 ms of matmuls, the work between two collectives in the measurements below.
void some_work() {
  static const at::Tensor a = at::randn({192, 192}), b = at::randn({192, 192});
  static at::Tensor c = at::empty({192, 192});
  for (int i = 0; i < 8; ++i) at::matmul_out(c, a, b);
}

double work_s(const World& w) { return mean_over_ranks(time_per_call(some_work, 1.0), w); }

/// Seconds of an all-reduce of `bytes` of fp32 over `comm` (trident's communicator, the
/// code path training uses, with its polling wait), each after some_work(), beyond
/// `work` = some_work()'s own time; per rank.
double communicator_all_reduce_s(MpiCommunicator& comm, int64_t bytes, double work,
                                 const World& w) {
  at::Tensor buffer = at::ones({bytes / 4});
  const double both = mean_over_ranks(time_per_call(
                                          [&] {
                                            some_work();
                                            comm.all_reduce(buffer, ReduceOp::kSum)->wait();
                                          },
                                          bytes >= (8 << 20) ? 2.0 : 1.0),
                                      w);
  return std::max(0.0, both - work);
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

/// One round of every measurement; `say` prints and logs a line.
plan::Cluster measure_once(const World& w, int cores, const Say& say) {
  plan::Cluster c;
  c.devices_per_node = w.size;
  c.cores_per_node = cores;  // more ranks than this on the machine time-share its cores
  c.memory_per_device_gb = mem_total_bytes() / w.size / 1e9;
  c.usable_memory_fraction = 0.8;  // the OS, MPI and the allocator's slack
  c.efficiency = 1.0;              // the rates below are measured, not peaks
  c.dp_overlap = 0;                // MPI on CPU progresses only inside MPI calls
  char line[160];
  for (const auto& [name, dtype] :
       {std::pair{"fp32", at::kFloat}, std::pair{"fp64", at::kDouble}}) {
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
  std::snprintf(line, sizeof line, "stream bandwidth (c = a + b, 64 MB fp32): %.2f GB/s per rank",
                c.memory_gbps);
  say(line);

  // A block so small that its arithmetic is negligible costs the fixed price of its ~40
  // operator calls and their autograd nodes.
  MpiCommunicator alone(MPI_COMM_SELF, "self", {w.rank}, 600);
  const BlockShape tiny{1, 4, 16, 2};
  c.layer_overhead_us = block_s(tiny, alone, w) * 1e6;
  std::snprintf(line, sizeof line,
                "fixed cost of one layer's forward + backward (operator calls): %.1f us per rank",
                c.layer_overhead_us);
  say(line);
  // And the model's ends: a one-layer stage less its layer.
  c.ends_overhead_us = std::max(0.0, stage_s(tiny, alone, w) * 1e6 - c.layer_overhead_us);
  std::snprintf(line, sizeof line,
                "fixed cost of the ends (embedding, final norm, head, loss): %.1f us per rank",
                c.ends_overhead_us);
  say(line);
  // What larger blocks take beyond their matmuls and that fixed cost is elementwise work
  // (norms, softmax, GELU, adds), which the planner charges as 6x the activation bytes
  // over an effective rate: measured at three sizes, as caches make small layers faster.
  for (const BlockShape& x :
       {BlockShape{2, 32, 64, 4}, BlockShape{4, 64, 128, 4}, BlockShape{8, 128, 256, 4}}) {
    const double measured = block_s(x, alone, w), matmuls = block_matmul_s(x, c);
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

  // Training's collectives go through trident's communicator (non-blocking MPI, polled),
  // between ranks that compute in between and arrive out of step: all-reduces over pairs
  // of ranks, each after 0.5 ms of matmuls, give the message times [sendrecv_us] holds
  // (a 2-rank all-reduce of 2x bytes is two messages of x), so that the planner's
  // collectives cost what training's do.
  if (w.size % 2 == 0) {
    MPI_Comm pair_comm;
    MPI_Comm_split(MPI_COMM_WORLD, w.rank / 2, w.rank, &pair_comm);
    MpiCommunicator pair(pair_comm, "pair", {w.rank / 2 * 2, w.rank / 2 * 2 + 1}, 600);
    std::map<double, double> messages;
    const double work = work_s(w);
    const plan::Link raw{bandwidth, c.latency_us * 1e-6, false, &c.sendrecv_seconds};
    for (int64_t bytes = 2 << 10; bytes <= (32 << 20); bytes *= 4) {
      const double s = communicator_all_reduce_s(pair, bytes, work, w);
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
    const double measured = block_s(tiny, pair, w);
    c.layer_overhead_tp_us = std::max(c.layer_overhead_us, (measured - reduces) * 1e6);
    std::snprintf(line, sizeof line,
                  "tiny block with tp 2: %.1f us, of which its 4 all-reduces %.1f us: "
                  "layer_overhead_tp_us %.1f",
                  measured * 1e6, reduces * 1e6, c.layer_overhead_tp_us);
    say(line);
  } else {
    say("an odd number of ranks: [sendrecv_us] holds the raw MPI_Sendrecv times");
  }

  return c;
}

/// The better of two rounds, figure by figure: the highest rates, the lowest times (other
/// work on a shared machine only ever slows a measurement down).
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
  a.intra_node_gbps = a.inter_node_gbps = std::max(a.intra_node_gbps, b.intra_node_gbps);
  a.latency_us = std::min(a.latency_us, b.latency_us);
  a.layer_overhead_us = std::min(a.layer_overhead_us, b.layer_overhead_us);
  a.layer_overhead_tp_us = std::min(a.layer_overhead_tp_us, b.layer_overhead_tp_us);
  a.ends_overhead_us = std::min(a.ends_overhead_us, b.ends_overhead_us);
  return a;
}

}  // namespace

int cmd_calibrate(const Args& args) {
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

  const int rounds = static_cast<int>(args.get_int("rounds", 3));
  if (rounds < 1) throw UsageError("--rounds must be at least 1");
  plan::Cluster c;
  for (int r = 0; r < rounds; ++r) {
    say("round " + std::to_string(r + 1) + " of " + std::to_string(rounds));
    const plan::Cluster round = measure_once(w, cores, say);
    c = r == 0 ? round : best_of(c, round);
    if (r + 1 < rounds) std::this_thread::sleep_for(std::chrono::seconds(10));  // spread out
  }
  c.name = args.get("name", "here");
  char line[200];
  std::snprintf(line, sizeof line,
                "kept, of %d rounds, the best of each figure: %.1f GFLOP/s fp32 at 256, "
                "layer %.1f us, tp layer %.1f us, ends %.1f us, memory %.2f GB/s",
                rounds, c.matmul_flops("fp32", 256) / 1e9, c.layer_overhead_us,
                c.layer_overhead_tp_us, c.ends_overhead_us, c.memory_gbps);
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
