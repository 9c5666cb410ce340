// measure_fastest: each candidate's trainer built, stepped and torn down in turn, in passes
// that alternate the order.
#include "cli/auto_measure.h"

#include <ATen/ATen.h>  // at::tensor

#include <cstdio>  // std::printf
#include <memory>  // std::unique_ptr

#include "cli/threads.h"            // apply_threads
#include "common/host_memory.h"     // set_release_large_blocks, release_host_memory
#include "common/median.h"          // median
#include "common/memory_tracker.h"  // reset_peak_tensor_bytes
#include "config/config.h"          // load_config
#include "models/model_config.h"    // run_device
#include "parallel/agreement.h"     // run_agreed
#include "parallel/communicator.h"  // Communicator
#include "parallel/parallel_context.h"
#include "parallel/world.h"  // local_rank
#include "train/trainer.h"   // Trainer

namespace trident::cli {

namespace {

/// The keys that keep a timing run from writing anything of the real run.
std::vector<std::string> without_outputs(std::vector<std::string> sets) {
  for (const char* key : {"logging.run_dir=none", "logging.metrics=\"\"", "logging.trace=\"\"",
                          "checkpoint.load=\"\"", "checkpoint.dir=\"\""})
    sets.emplace_back(key);
  return sets;
}

/// Builds the candidate's trainer, trains kMeasureSteps steps and tears it down; returns
/// this rank's times of the steps after the first kMeasureWarmup. The memory it freed goes
/// back to the system before the next candidate, whose blocks are of other sizes.
std::vector<double> time_steps(const std::string& config_path, const MeasuredCandidate& c,
                               Communicator& job) {
  TrainConfig config;
  run_agreed(job, [&] { config = load_config(config_path, without_outputs(c.sets), job.size()); });
  apply_threads(config.train.threads, job);
  set_release_large_blocks(config.releases_host_memory());
  std::vector<double> steps;
  {
    const auto& p = config.parallel;
    ParallelContext ctx(job, static_cast<int>(p.dp), static_cast<int>(p.pp), static_cast<int>(p.tp),
                        p.timeout_s, run_device(config.train.device, local_rank()),
                        static_cast<int>(p.ep), static_cast<int>(p.cp));
    std::unique_ptr<Trainer> trainer;
    run_agreed(job, [&] { trainer = std::make_unique<Trainer>(config, ctx); });
    for (int s = 0; s < kMeasureSteps; ++s) {
      const StepMetrics m = trainer->step();
      if (s >= kMeasureWarmup) steps.push_back(m.step_time_s);
    }
  }
  release_host_memory();
  return steps;
}

}  // namespace

std::vector<size_t> measure_order(size_t k) {
  std::vector<size_t> order;
  for (int pass = 0; pass < kMeasurePasses; ++pass)
    for (size_t n = 0; n < k; ++n) order.push_back(pass % 2 == 0 ? n : k - 1 - n);
  return order;
}

size_t measure_fastest(const std::string& config_path, std::vector<MeasuredCandidate>& candidates,
                       Communicator& job) {
  std::vector<std::vector<double>> steps(candidates.size());
  for (const size_t i : measure_order(candidates.size())) {
    const std::vector<double> timed = time_steps(config_path, candidates[i], job);
    steps[i].insert(steps[i].end(), timed.begin(), timed.end());
  }
  size_t best = 0;
  for (size_t i = 0; i < candidates.size(); ++i) {
    MeasuredCandidate& c = candidates[i];
    // Rank 0's clock decides, the same on every rank.
    at::Tensor t = at::tensor({median(steps[i])}, at::kDouble);
    job.broadcast(t, 0)->wait();
    c.measured_s = t.item<double>();
    if (c.measured_s < candidates[best].measured_s) best = i;
    if (job.rank() == 0)
      std::printf("auto: measured #%zu %s: %.3f s a step (predicted %.3f s, %+.1f%%)\n", i + 1,
                  c.name.c_str(), c.measured_s, c.predicted_s,
                  100 * (c.predicted_s / c.measured_s - 1));
  }
  reset_peak_tensor_bytes();
  if (job.rank() == 0) {
    std::printf("auto: chose #%zu, the fastest measured of %zu", best + 1, candidates.size());
    if (best != 0)
      std::printf(" (the predicted best, #1, took %.1f%% longer)",
                  100 * (candidates[0].measured_s / candidates[best].measured_s - 1));
    std::printf("\n");
    std::fflush(stdout);
  }
  return best;
}

}  // namespace trident::cli
