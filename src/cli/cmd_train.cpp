// `trident train CONFIG`: validates the config on every rank, builds the parallel context
// and the trainer, resumes from a checkpoint if asked, runs the steps with progress on
// rank 0, saves checkpoints, and writes the metrics, the trace and a summary.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>  // the sample's text, quoted

#include "cli/args.h"
#include "cli/auto_train.h"  // auto_overrides
#include "cli/commands.h"
#include "cli/threads.h"             // apply_threads
#include "common/fault_injection.h"  // preempt_after_step
#include "common/host_memory.h"      // set_release_large_blocks
#include "common/memory_tracker.h"
#include "config/config.h"
#include "config/input_error.h"   // InputError
#include "models/model_config.h"  // check_device, run_device
#include "parallel/agreement.h"
#include "parallel/parallel_context.h"
#include "parallel/placement.h"  // placement_of, node_names
#include "parallel/world.h"
#include "train/checkpoint_lock.h"  // CheckpointDirLock
#include "train/checkpointing.h"    // save_checkpoint, load_checkpoint of a Trainer
#include "train/divergence.h"       // roll_back_run, divergence_message
#include "train/metrics_log.h"
#include "train/preemption.h"  // PreemptionGuard
#include "train/run_dir.h"     // resolve_run_paths, check_run_dir_is_free
#include "train/run_report.h"
#include "train/run_saver.h"  // RunSaver
#include "train/trace.h"
#include "train/trainer.h"
#include "zero/zero_optimizer.h"  // offload_description

namespace trident::cli {

namespace {

/// load_config, saying so when a layout of several ranks meets a build without MPI.
TrainConfig load_single_or_mpi_config(const std::string& path, const std::vector<std::string>& sets,
                                      int world) {
  try {
    return load_config(path, sets, world);
  } catch (const InputError& e) {
    if (multi_process_built()) throw;
    throw InputError(std::string(e.what()) +
                     "\n(this trident was built without MPI and runs one process: "
                     "configure with MPI to run several ranks; docs/gpu.md)");
  }
}

void print_header(const TrainConfig& config, Trainer& trainer, int64_t params, int world) {
  const auto& p = config.parallel;
  std::cout << "trident: " << params << " parameters, " << world << " ranks = dp " << p.dp
            << " x pp " << p.pp << " x tp " << p.tp
            << (p.ep > 1 ? " (experts over ep " + std::to_string(p.ep) + ")" : std::string())
            << ", ZeRO stage " << p.zero_stage << ", " << p.schedule << " over "
            << config.micro_batches() << " micro-batches, checkpointing "
            << p.activation_checkpointing << (p.sequence_parallel ? ", sequence parallel" : "")
            << ", " << config.train.precision << "\n";
  if (config.optimizer.name == OptimizerName::kMuon)
    std::cout << "optimizer: " << trainer.optimizer().muon_description() << "\n";
  if (p.offload_optimizer != OffloadTier::kNone || p.offload_params != OffloadTier::kNone)
    std::cout << "offload: " << trainer.optimizer().offload_description() << "\n";
  if (config.releases_host_memory())
    std::cout << "memory: freed blocks of 1 MiB or more are kept only within the most ever in "
                 "use (train.allocator = "
              << config.train.allocator << ")\n";
  std::cout << "data: " << trainer.data_description() << "\n";
  if (trainer.validates()) std::cout << "eval: " << trainer.eval_description() << "\n";
  if (const auto floor = trainer.loss_floor())
    std::cout << "loss floor (the source's entropy rate): " << *floor << " nats\n";
  std::cout << std::flush;
}

/// Whether the run validates after `step`: every eval.every steps, and after the last one
/// with eval.at_end.
bool validation_due(const TrainConfig& config, const Trainer& trainer, int64_t step, int64_t last) {
  if (!trainer.validates()) return false;
  const int64_t every = config.eval.every;
  return (every > 0 && step % every == 0) || (config.eval.at_end && step == last);
}

/// Prints a sample the model wrote after `step` and appends it to the run directory's
/// samples.txt.
void write_sample(const TrainConfig& config, int64_t step, const std::string& text) {
  const std::string shown = config.eval.sample_prompt + text;
  std::cout << "sample after step " << step << ": " << nlohmann::json(shown).dump() << "\n";
  if (config.logging.run_dir.empty()) return;
  std::ofstream(config.logging.run_dir + "/samples.txt", std::ios::app)
      << "step " << step << ": " << nlohmann::json(shown).dump() << "\n";
}

/// Resumes as checkpoint.load asks; returns the checkpoint's path ("" when starting fresh).
std::string resume(Trainer& trainer, ParallelContext& ctx, const TrainConfig& config) {
  const std::string& load = config.checkpoint.load;
  if (load.empty()) return "";
  if (load == kAutoLoad) return resume_auto(trainer, ctx, config.checkpoint.dir);
  load_checkpoint(trainer, ctx, load, config.checkpoint.dir);  // agreed inside
  return load;
}

/// What the preemption saved, for its line: "saved DIR/step_N", or why nothing was.
std::string preemption_save_text(const RunSaver& saver, const StepMetrics& m) {
  if (!saver.enabled()) return "nothing saved (checkpoint.dir is empty)";
  if (!m.skipped) return "saved " + saver.last_path();
  const std::string why = m.spike ? "its loss spiked" : "its weights gave a non-finite loss";
  const std::string newest = saver.last_path().empty()
                                 ? std::string("no save is left to resume from")
                                 : "the newest save is " + saver.last_path();
  return "nothing saved (step " + std::to_string(m.step) + " was skipped: " + why + "); " + newest;
}

}  // namespace

int cmd_train(const Args& args) {
  const std::unique_ptr<Communicator> job = world_communicator();
  const int world = job->size(), rank = job->rank();
  const bool automatic = auto_requested(args, *job);
  const std::vector<std::string> sets = automatic ? auto_overrides(args, *job) : args.sets;
  TrainConfig config;
  std::string chosen_toml;  // --auto: the config as chosen, before its paths are resolved
  std::unique_ptr<CheckpointDirLock> lock;  // rank 0's, for the whole run
  run_agreed(*job, [&] {
    config = load_single_or_mpi_config(args.positional[0], sets, world);
    if (automatic) chosen_toml = to_toml(config);
    resolve_run_paths(config);
    check_device(config.train.device);
    if (rank != 0) return;
    // Before the run directory's check: a run that still saves there is named as such.
    if (!config.checkpoint.dir.empty())
      lock = std::make_unique<CheckpointDirLock>(config.checkpoint.dir);
    check_run_dir_is_free(config);
  });
  if (lock && !lock->taken_over().empty())
    std::cout << "checkpoint.dir: took over the lock of " << lock->taken_over()
              << ", which has ended" << std::endl;
  // The signals were caught from the start (catch_preemption_early); the config's set is
  // kept, and a signal during the start-up is noticed before the first step.
  const PreemptionGuard preemption(config.checkpoint.preempt_signals);
  apply_threads(config.train.threads, *job);
  set_release_large_blocks(config.releases_host_memory());
  install_memory_tracker();

  const auto& p = config.parallel;
  ParallelContext ctx(*job, static_cast<int>(p.dp), static_cast<int>(p.pp), static_cast<int>(p.tp),
                      p.timeout_s, run_device(config.train.device, local_rank()),
                      static_cast<int>(p.ep), static_cast<int>(p.cp));
  const std::vector<std::string> nodes = node_names(ctx.world());
  const Placement placement = placement_of(ctx.grid(), nodes);
  for (Communicator* group : ctx.all_groups()) group->set_nodes(nodes);
  std::unique_ptr<Trainer> trainer;
  run_agreed(*job, [&] { trainer = std::make_unique<Trainer>(config, ctx); });
  const std::string resumed = resume(*trainer, ctx, config);
  std::unique_ptr<MetricsLog> metrics;
  run_agreed(*job, [&] {
    if (rank == 0)
      metrics = std::make_unique<MetricsLog>(config.logging.metrics,
                                             resumed.empty() ? -1 : trainer->completed_steps());
  });
  const int64_t params = count_parameters(*trainer, ctx);
  const auto floor = trainer->loss_floor();
  if (rank == 0) {
    print_header(config, *trainer, params, world);
    std::cout << "placement: " << placement.describe() << "\n";
    if (ctx.device().is_cuda())
      std::cout << "device: " << ctx.device().str() << " on rank 0; the groups communicate over "
                << transport_name(ctx.transport()) << "\n";
    if (placement.tp_across)
      std::cout << "warning: tp groups span nodes, so every layer's all-reduces cross the "
                   "slowest link; place consecutive ranks on one node (mpirun --map-by slot, "
                   "srun --distribution=block)\n";
    write_run_info(config, params, floor);
    if (automatic && !config.logging.run_dir.empty()) {
      const std::string path = config.logging.run_dir + "/resolved_config.toml";
      std::ofstream(path) << "# The configuration trident train --auto chose; `trident train "
                             "THIS_FILE` trains it again\n# (with a fresh logging.run_dir).\n"
                          << chosen_toml;
      std::cout << "auto: the resolved config is in " << path << "\n";
    }
    if (!resumed.empty()) {
      std::cout << "resumed from " << resumed << " after step " << trainer->completed_steps()
                << "\n";
      const std::string change = layout_change(resumed, config.checkpoint.dir, config);
      if (!change.empty()) std::cout << "elastic: " << change << "\n";
      const std::string lr = schedule_change(resumed, config.checkpoint.dir, config);
      if (!lr.empty()) std::cout << "lr schedule: " << lr << "\n";
    } else if (config.checkpoint.load == kAutoLoad)
      std::cout << "checkpoint.load = \"auto\": no checkpoint in " << config.checkpoint.dir
                << ", starting fresh\n";
  }
  report_memory(*trainer, ctx, 0);

  const int64_t last = config.train.stop_at > 0 ? config.train.stop_at : config.train.steps;
  const auto start = std::chrono::steady_clock::now();
  TraceRecorder trace;
  RunTotals totals;
  RunSaver saver(config, ctx);
  int64_t peak_activations = 0;
  // A signal during the start-up (a scheduler that preempts right after allocating):
  // nothing was trained, so nothing needs saving.
  if (const int signo = agree_at_boundary(ctx.world(), preemption.caught(), 0.0).signal) {
    if (rank == 0)
      std::cout << "preempted by " << signal_name(signo) << " before the first step"
                << (resumed.empty() ? "" : " after resuming " + resumed)
                << ": nothing needed saving; exit code " << config.checkpoint.preempt_exit_code
                << std::endl;
    return static_cast<int>(config.checkpoint.preempt_exit_code);
  }
  // The initial weights, as step_0: what an export or another run starts from. A resumed
  // run started elsewhere.
  if (config.checkpoint.save_initial && resumed.empty()) saver.save(*trainer);
  RollbackBudget rollbacks;
  StepMetrics m;
  while (trainer->completed_steps() < last) {
    m = trainer->step();
    fault::preempt_after_step(m.step);
    // The weights that just gave a non-finite loss must not be resumed from. (A spike may
    // come from its data as well: the guard marks the checkpoints around it instead.)
    if (m.skipped && !m.spike && m.skipped_in_a_row == 1) saver.reject(m.step - 1);
    // The rollback comes before the log line, which records it.
    if (rollback_due(config, m)) m.rollback = roll_back_run(*trainer, ctx, saver, m, rollbacks);
    if (!m.rollback && validation_due(config, *trainer, m.step, last)) {
      m.validation = trainer->validate();
      m.eval_sources = trainer->eval_sources();
      totals.evaluations += 1;
      totals.eval_seconds += m.validation->seconds;
      totals.val_loss = m.validation->loss;
      if (config.eval.sample_tokens > 0) {
        const std::string text = trainer->sample(m.step);
        if (rank == 0) write_sample(config, m.step, text);
      }
    }
    trace.add(m.step, trainer->last_step());
    peak_activations = std::max(peak_activations, trainer->last_step().peak_activation_bytes);
    totals.steps += 1;
    totals.final_loss = m.loss;
    totals.tokens += m.tokens_per_s * m.step_time_s;
    totals.seconds += m.step_time_s;
    const bool log = m.step % std::max<int64_t>(1, config.train.log_every) == 0 || m.step == last ||
                     m.skipped || !m.guard_warning.empty() || m.validation;
    if (rank == 0 && log) {
      const double elapsed =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      std::cout << progress_line(m, last, elapsed, floor) << std::endl;
      metrics->write(m);
    }
    if (m.skipped && !m.rollback && m.skipped_in_a_row >= config.train.max_skipped_steps) {
      saver.finish();                                 // commits a good save in flight
      throw JobError(divergence_message(config, m));  // every rank alike: no collective
    }
    const int64_t every = config.checkpoint.save_every;
    // A skipped step's weights are those that just gave a non-finite loss: not worth a save.
    if (!m.skipped && ((every > 0 && m.step % every == 0) || m.step == last)) saver.save(*trainer);
    const BoundaryAgreement agreed =
        agree_at_boundary(ctx.world(), preemption.caught(), saver.local_state());
    saver.advance(agreed.save_state);
    if (const int signo = agreed.signal) {
      // A skipped step trained nothing: as with the periodic saves, its weights are not
      // saved (after a non-finite loss, "auto" would resume from the weights that gave it).
      if (!m.skipped && saver.last_step() != m.step) saver.save(*trainer);
      saver.finish();
      if (!config.logging.trace.empty()) trace.write(config.logging.trace, ctx);
      if (rank == 0) {
        std::cout << "preempted at step " << m.step << " by " << signal_name(signo) << ", "
                  << preemption_save_text(saver, m) << "; exit code "
                  << config.checkpoint.preempt_exit_code << std::endl;
      }
      return static_cast<int>(config.checkpoint.preempt_exit_code);
    }
  }
  saver.finish();
  if (!config.logging.trace.empty()) trace.write(config.logging.trace, ctx);
  // Weights that stopped changing at a skipped step are no trained result to report as one.
  if (m.skipped) throw JobError(skipped_last_step_message(config, m));
  report_memory(*trainer, ctx, peak_activations);
  report_summary(config, totals, floor, trace.split(), ctx);
  report_cross_node(ctx, nodes);
  if (rank == 0 && saver.saves() > 0)
    std::printf("  checkpoint saves: %lld, training stalled %.3f s for them (%s)\n",
                static_cast<long long>(saver.saves()), saver.stall_s(),
                config.checkpoint.async ? "written in the background" : "synchronous");
  return 0;
}

}  // namespace trident::cli
