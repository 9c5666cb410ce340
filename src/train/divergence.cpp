// Rollback and the messages of a diverged run.
#include "train/divergence.h"

#include <cstdio>  // std::printf

#include "parallel/agreement.h"         // JobError
#include "parallel/parallel_context.h"  // ParallelContext::rank
#include "train/checkpointing.h"        // roll_back
#include "train/run_saver.h"            // RunSaver

namespace trident {
namespace {

/// "steps 12 to 14 all had a loss spike" or "... a non-finite loss or gradient norm".
std::string what_went_wrong(const StepMetrics& m) {
  const int64_t first = m.step - m.skipped_in_a_row + 1;
  return "steps " + std::to_string(first) + " to " + std::to_string(m.step) +
         " were skipped (the " + "last for " +
         (m.spike ? "a spike: " + m.spike_reason
                  : "a non-finite loss or gradient norm: loss " + std::to_string(m.loss) +
                        ", gradient norm " + std::to_string(m.grad_norm)) +
         ")";
}

const char* kTry =
    " Try a lower optimizer.lr, more optimizer.warmup_steps, or optimizer.grad_clip = 1.0, "
    "then resume with checkpoint.load = \"auto\".";

}  // namespace

bool rollback_due(const TrainConfig& config, const StepMetrics& m) {
  const int64_t after = config.guard.rollback_after;
  return config.guard.enabled && m.skipped && after > 0 && m.skipped_in_a_row >= after;
}

StepMetrics::Rollback roll_back_run(Trainer& trainer, ParallelContext& ctx, RunSaver& saver,
                                    const StepMetrics& m, RollbackBudget& budget) {
  const TrainConfig& config = trainer.config();
  const std::string& dir = config.checkpoint.dir;
  if (budget.used >= config.guard.max_rollbacks)
    throw JobError("training diverged: " + what_went_wrong(m) + ", and the run already rolled " +
                   "back guard.max_rollbacks = " + std::to_string(config.guard.max_rollbacks) +
                   " times." + kTry);
  saver.finish();  // a save in flight is committed (and judged) before choosing
  const std::string path = dir.empty() ? "" : roll_back(trainer, ctx, dir);
  if (path.empty())
    throw JobError(
        "training diverged: " + what_went_wrong(m) +
        (dir.empty()
             ? std::string(", and checkpoint.dir is empty, so there is no checkpoint "
                           "to roll back to; set checkpoint.dir and checkpoint.save_every")
             : ", and " + dir + " holds no checkpoint the guard marked good to roll back to") +
        "." + kTry);
  budget.used += 1;
  StepMetrics::Rollback rollback;
  rollback.to_step = trainer.completed_steps();
  rollback.checkpoint = path;
  // Every batch since the checkpoint, the spikes' included, is left out: the data that led
  // there is the likeliest cause (PaLM, OLMo).
  rollback.left_out = {trainer.data_batch(rollback.to_step + 1), m.data_batch};
  trainer.skip_data(rollback.left_out);
  if (ctx.rank() == 0) {
    std::printf(
        "rolled back to %s after %lld skipped steps in a row; batches %lld-%lld of the data are "
        "left out (rollback %lld of guard.max_rollbacks = %lld)\n",
        path.c_str(), static_cast<long long>(m.skipped_in_a_row),
        static_cast<long long>(rollback.left_out.first),
        static_cast<long long>(rollback.left_out.last), static_cast<long long>(budget.used),
        static_cast<long long>(config.guard.max_rollbacks));
    std::fflush(stdout);
  }
  return rollback;
}

std::string divergence_message(const TrainConfig& config, const StepMetrics& m) {
  const std::string where = config.checkpoint.dir.empty()
                                ? ""
                                : " The checkpoints in " + config.checkpoint.dir +
                                      " hold only finite values from before the divergence.";
  return "training diverged: " + what_went_wrong(m) +
         "; train.max_skipped_steps = " + std::to_string(config.train.max_skipped_steps) +
         " stops the job." + where + kTry;
}

std::string skipped_last_step_message(const TrainConfig& config, const StepMetrics& m) {
  return "the run ended on a skipped step: " + what_went_wrong(m) +
         "; its final weights are those before them, not a trained result." +
         (config.checkpoint.dir.empty()
              ? std::string()
              : " The newest good checkpoint in " + config.checkpoint.dir + " predates them.") +
         kTry;
}

}  // namespace trident
