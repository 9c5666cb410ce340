// `trident train CONFIG`: validates the config on every rank, builds the parallel context
// and the trainer, runs the steps with progress on rank 0, and writes the metrics.
#include <ATen/Parallel.h>  // at::set_num_threads
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <iostream>
#include <thread>

#include "cli/args.h"
#include "cli/commands.h"
#include "config/config.h"
#include "models/gpt.h"
#include "parallel/agreement.h"
#include "parallel/parallel_context.h"
#include "train/memory_tracker.h"
#include "train/metrics_log.h"
#include "train/trainer.h"
#include "zero/zero_optimizer.h"

namespace trident::cli {

namespace {

const CommandSpec kSpec{
    "train",
    "mpirun -np N trident train CONFIG.toml [--set section.key=value ...]",
    "Trains the model of CONFIG with the layout parallel.dp x parallel.pp x parallel.tp,\n"
    "which must multiply to the number of ranks N (parallel.dp may be left out and is then\n"
    "derived). Rank 0 prints progress every train.log_every steps and writes one JSON line\n"
    "per logged step to logging.metrics.",
    {},
    1,
    1};

/// One intra-op thread per rank when the ranks of this node fill its cores.
void set_threads(int64_t configured) {
  MPI_Comm local;
  MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &local);
  int local_ranks = 1;
  MPI_Comm_size(local, &local_ranks);
  MPI_Comm_free(&local);
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  const int threads = configured > 0 ? static_cast<int>(configured)
                                     : std::max(1, cores / std::max(1, local_ranks));
  at::set_num_threads(threads);
}

/// Parameters of the whole model: shards summed over the model-parallel group, each
/// tp-replicated parameter and the tied head counted once.
int64_t count_parameters(GptStage& model, ParallelContext& ctx) {
  double local = 0;
  for (const auto& p : model.params().params()) {
    if (p.spec.tied_copy) continue;
    const double n = static_cast<double>(p.tensor.numel());
    local += p.spec.shard.replicated() ? n / ctx.grid().tp() : n;
  }
  at::Tensor t = at::full({1}, local, at::kDouble);
  ctx.model_parallel().all_reduce(t)->wait();
  return static_cast<int64_t>(std::llround(t.item<double>()));
}

void report_memory(ZeroOptimizer& optimizer, ParallelContext& ctx) {
  const ModelStateBytes b = optimizer.bytes();
  at::Tensor mine = at::tensor({b.parameters, b.gradients, b.optimizer_states}, at::kLong);
  at::Tensor all = at::empty({3 * ctx.grid().world_size()}, at::kLong);
  ctx.world().all_gather(all, mine)->wait();
  if (ctx.rank() != 0) return;
  std::cout << "model-state bytes per rank (parameters / gradients / optimizer states):\n";
  for (int r = 0; r < ctx.grid().world_size(); ++r) {
    const GridCoord c = ctx.grid().coord_of(r);
    std::printf("  rank %d (dp %d pp %d tp %d): %lld / %lld / %lld\n", r, c.dp, c.pp, c.tp,
                static_cast<long long>(all[3 * r].item<int64_t>()),
                static_cast<long long>(all[3 * r + 1].item<int64_t>()),
                static_cast<long long>(all[3 * r + 2].item<int64_t>()));
  }
}

}  // namespace

int cmd_train(const Argv& argv) {
  const Args args = parse_args(kSpec, argv);
  if (args.help) {
    std::cout << help_text(kSpec);
    return 0;
  }
  int world = 1, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  TrainConfig config;
  run_agreed(MPI_COMM_WORLD, [&] { config = load_config(args.positional[0], args.sets, world); });
  set_threads(config.train.threads);
  install_memory_tracker();

  const auto& p = config.parallel;
  ParallelContext ctx(MPI_COMM_WORLD, static_cast<int>(p.dp), static_cast<int>(p.pp),
                      static_cast<int>(p.tp), p.timeout_s);
  std::unique_ptr<Trainer> trainer;
  MetricsLog* metrics_ptr = nullptr;
  std::unique_ptr<MetricsLog> metrics;
  run_agreed(MPI_COMM_WORLD, [&] {
    trainer = std::make_unique<Trainer>(config, ctx);
    if (rank == 0) metrics = std::make_unique<MetricsLog>(config.logging.metrics);
  });
  metrics_ptr = metrics.get();

  const int64_t params = count_parameters(trainer->model(), ctx);
  const auto floor = trainer->loss_floor();
  if (rank == 0) {
    std::cout << "trident: " << params << " parameters, " << world << " ranks = dp " << p.dp
              << " x pp " << p.pp << " x tp " << p.tp << ", ZeRO stage " << p.zero_stage
              << ", " << p.schedule << " over " << config.micro_batches()
              << " micro-batches, checkpointing " << p.activation_checkpointing << ", "
              << config.train.precision << "\n";
    std::cout << "data: " << trainer->data_description() << "\n";
    if (floor) std::cout << "loss floor (entropy rate of the source): " << *floor << " nats\n";
  }
  report_memory(trainer->optimizer(), ctx);

  const int64_t last = config.train.stop_at > 0 ? config.train.stop_at : config.train.steps;
  const auto start = std::chrono::steady_clock::now();
  StepMetrics m;
  double tokens = 0, busy = 0;
  while (trainer->completed_steps() < last) {
    m = trainer->step();
    tokens += m.tokens_per_s * m.step_time_s;
    busy += m.step_time_s;
    const bool log = m.step % std::max<int64_t>(1, config.train.log_every) == 0 || m.step == last;
    if (rank == 0 && log) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cout << progress_line(m, last, elapsed, floor) << std::endl;
      metrics_ptr->write(m);
    }
  }
  if (rank == 0) {
    std::cout << "done: " << m.step << " steps, final loss " << m.loss;
    if (floor) std::cout << " (floor " << *floor << ", " << (m.loss / *floor - 1) * 100 << "% above)";
    std::cout << ", " << static_cast<long long>(tokens / std::max(busy, 1e-9)) << " tokens/s\n";
  }
  return 0;
}

}  // namespace trident::cli
