// Saving and resuming a Trainer through the checkpoint module.
#include "train/checkpointing.h"

#include "train/trainer.h"  // Trainer

namespace trident {

TrainingState training_state(Trainer& trainer) {
  return TrainingState{trainer.model(), trainer.optimizer(), trainer.config(),
                       trainer.completed_steps()};
}

std::string save_checkpoint(Trainer& trainer, ParallelContext& ctx, const std::string& dir,
                            int64_t keep_last) {
  return save_checkpoint(training_state(trainer), ctx, dir, keep_last);
}

void load_checkpoint(Trainer& trainer, ParallelContext& ctx, const std::string& path,
                     const std::string& checkpoint_dir) {
  trainer.set_completed_steps(load_checkpoint(training_state(trainer), ctx, path, checkpoint_dir));
}

}  // namespace trident
