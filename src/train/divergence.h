// What a run does when its steps go wrong: the rollback of the loss-spike guard after
// guard.rollback_after skipped steps in a row, and the messages of a job that stops
// because training diverged.
#pragma once
#include <cstdint>
#include <string>

#include "train/trainer.h"  // StepMetrics

namespace trident {
class ParallelContext;
class RunSaver;

/// Counts the run's rollbacks against guard.max_rollbacks.
struct RollbackBudget {
  int64_t used = 0;
};

/// Whether the step `m` calls for a rollback: the guard rolls back and `m` ends
/// guard.rollback_after skipped steps in a row.
bool rollback_due(const TrainConfig& config, const StepMetrics& m);

/// Commits the save in flight, reloads the newest checkpoint the guard marked good, and
/// leaves out the data batches from that checkpoint's next step to `m`'s. Returns what it
/// did. Throws a JobError (every rank alike) when no checkpoint is there to go back to or
/// the budget is spent. Collective.
StepMetrics::Rollback roll_back_run(Trainer& trainer, ParallelContext& ctx, RunSaver& saver,
                                    const StepMetrics& m, RollbackBudget& budget);

/// Why the job stops after train.max_skipped_steps skipped steps in a row, and what to try.
std::string divergence_message(const TrainConfig& config, const StepMetrics& m);

/// Why a run whose last step was skipped ends with an error rather than success.
std::string skipped_last_step_message(const TrainConfig& config, const StepMetrics& m);

}  // namespace trident
