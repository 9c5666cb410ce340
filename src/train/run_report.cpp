// Run directory, memory report and closing summary.
#include "train/run_report.h"

#include <ATen/ATen.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>  // nlohmann::json

#include "models/gpt.h"
#include "parallel/parallel_context.h"
#include "tensor_parallel/parameter.h"  // local_shape, copies_over_tp
#include "train/trainer.h"
#include "zero/zero_optimizer.h"

namespace trident {

void write_run_info(const TrainConfig& config, int64_t parameters, std::optional<double> floor) {
  if (config.logging.run_dir.empty()) return;
  const auto& p = config.parallel;
  nlohmann::json info = {
      {"parameters", parameters},
      {"dp", p.dp},
      {"cp", p.cp},
      {"ep", p.ep},
      {"pp", p.pp},
      {"tp", p.tp},
      {"zero_stage", p.zero_stage},
      {"schedule", name_of(p.schedule)},
      {"activation_checkpointing", name_of(p.activation_checkpointing)},
      {"sequence_parallel", p.sequence_parallel},
      {"precision", name_of(config.train.precision)},
      {"title", "dp " + std::to_string(p.dp) +
                    (p.cp > 1 ? " x cp " + std::to_string(p.cp) : std::string()) + " x pp " +
                    std::to_string(p.pp) + " x tp " + std::to_string(p.tp) +
                    (p.ep > 1 ? ", ep " + std::to_string(p.ep) : std::string()) + ", ZeRO " +
                    std::to_string(p.zero_stage) + ", " + name_of(p.schedule) + ", " +
                    std::to_string(parameters) + " parameters"}};
  info["loss_floor"] = floor ? nlohmann::json(*floor) : nlohmann::json(nullptr);
  std::ofstream(config.logging.run_dir + "/run.json") << info.dump(2) << "\n";
}

int64_t count_parameters(Trainer& trainer, ParallelContext& ctx) {
  double local = 0, experts = 0;  // a routed expert lives on one rank of its ep group
  for (const auto& p : trainer.model().params().params()) {
    if (p.spec.tied_copy) continue;
    // The shard's shape, not the tensor's: in ZeRO stage 3 a released parameter is empty.
    int64_t numel = 1;
    for (int64_t d : local_shape(p.spec, ctx.grid().tp())) numel *= d;
    const double n = static_cast<double>(numel);
    (p.spec.expert ? experts : local) += n / copies_over_tp(p.spec.shard, ctx.grid().tp());
  }
  at::Tensor t = at::tensor({local, experts}, at::kDouble);
  ctx.model_parallel().all_reduce(t)->wait();
  ctx.ep().all_reduce(t.narrow(0, 1, 1))->wait();  // the experts: each ep rank holds its own
  return static_cast<int64_t>(std::llround(t.sum().item<double>()));
}

void report_memory(Trainer& trainer, ParallelContext& ctx, int64_t peak_activation_bytes) {
  const ModelStateBytes b = trainer.optimizer().bytes();
  at::Tensor mine =
      at::tensor({b.parameters, b.gradients, b.optimizer_states, peak_activation_bytes}, at::kLong);
  const int world = ctx.grid().world_size();
  at::Tensor all = at::empty({4 * world}, at::kLong);
  ctx.world().all_gather(all, mine)->wait();
  if (ctx.rank() != 0) return;
  std::printf(
      "memory per rank, bytes: parameters / gradients / optimizer states / activations (peak)\n");
  auto v = all.accessor<int64_t, 1>();
  for (int r = 0; r < world; ++r) {
    const GridCoord c = ctx.grid().coord_of(r);
    std::printf("  rank %d (dp %d pp %d tp %d): %lld / %lld / %lld / %lld\n", r, c.dp, c.pp, c.tp,
                static_cast<long long>(v[4 * r]), static_cast<long long>(v[4 * r + 1]),
                static_cast<long long>(v[4 * r + 2]), static_cast<long long>(v[4 * r + 3]));
  }
  std::fflush(stdout);
}

void report_summary(const TrainConfig& config, const RunTotals& totals, std::optional<double> floor,
                    const TimeSplit& split, ParallelContext& ctx) {
  at::Tensor mine = at::tensor({split.wall, split.compute, split.communication}, at::kDouble);
  at::Tensor sum = mine.clone();
  ctx.world().all_reduce(sum)->wait();
  if (ctx.rank() != 0) return;
  const double wall = std::max(sum[0].item<double>(), 1e-12);
  const double compute = sum[1].item<double>() / wall * 100;
  const double comm = sum[2].item<double>() / wall * 100;
  std::printf("\nsummary: %lld steps, final loss %.4f", static_cast<long long>(totals.steps),
              totals.final_loss);
  if (floor)
    std::printf(" against the floor %.4f (%.1f%% above)", *floor,
                (totals.final_loss / *floor - 1.0) * 100.0);
  std::printf("\n  throughput %.0f tokens/s over %.1f s of steps\n",
              totals.tokens / std::max(totals.seconds, 1e-12), totals.seconds);
  if (totals.evaluations > 0)
    std::printf(
        "  validation: %lld evaluations, %.1f s (%.2f s each, not in the throughput); "
        "last val_loss %.4f\n",
        static_cast<long long>(totals.evaluations), totals.eval_seconds,
        totals.eval_seconds / static_cast<double>(totals.evaluations), totals.val_loss);
  std::printf(
      "  time of the ranks: compute %.1f%%, communication %.1f%%, bubble and other %.1f%%\n",
      compute, comm, 100.0 - compute - comm);
  if (!config.logging.run_dir.empty())
    std::printf("  run directory: %s\n", config.logging.run_dir.c_str());
  if (!config.logging.metrics.empty())
    std::printf("  metrics: %s\n", config.logging.metrics.c_str());
  if (!config.logging.trace.empty())
    std::printf("  trace: %s (open in Perfetto or chrome://tracing)\n",
                config.logging.trace.c_str());
  if (!config.checkpoint.dir.empty())
    std::printf("  checkpoints: %s\n", config.checkpoint.dir.c_str());
  std::fflush(stdout);
}

void report_cross_node(ParallelContext& ctx, const std::vector<std::string>& node_of_rank) {
  int64_t sent = 0, uncounted = 0;  // read before the gather below adds to them
  for (Communicator* g : ctx.all_groups()) {
    sent += g->cross_node_bytes();
    uncounted += g->cross_node_uncounted();
  }
  const int world = ctx.grid().world_size();
  at::Tensor mine = at::tensor({sent, uncounted}, at::kLong);
  at::Tensor all = at::empty({2 * world}, at::kLong);
  ctx.world().all_gather(all, mine)->wait();
  if (ctx.rank() != 0) return;
  std::vector<std::string> nodes;  // in order of first rank
  std::vector<int64_t> node_sent;
  int64_t node_uncounted = 0;
  auto v = all.accessor<int64_t, 1>();
  for (int r = 0; r < world; ++r) {
    const std::string& node = node_of_rank.at(static_cast<size_t>(r));
    size_t i = 0;
    while (i < nodes.size() && nodes[i] != node) ++i;
    if (i == nodes.size()) {
      nodes.push_back(node);
      node_sent.push_back(0);
    }
    node_sent[i] += v[2 * r];
    node_uncounted += v[2 * r + 1];
  }
  if (nodes.size() < 2) return;
  std::printf("inter-node bytes sent, as the communicators count them:");
  for (size_t i = 0; i < nodes.size(); ++i)
    std::printf(" %s %lld", nodes[i].c_str(), static_cast<long long>(node_sent[i]));
  std::printf(" (and %lld calls over groups of more than two ranks, not counted)\n",
              static_cast<long long>(node_uncounted));
  std::fflush(stdout);
}

}  // namespace trident
