// Saving and resuming a Trainer: hands the checkpoint module the parts it stores (model
// stage, optimizer shard, config, step) and restores the trainer's step from what it loads.
#pragma once
#include <cstdint>  // int64_t
#include <string>   // std::string

#include "checkpoint/checkpoint.h"  // TrainingState, save_checkpoint, load_checkpoint

namespace trident {
class Trainer;

/// The trainer's parts, as a checkpoint holds them.
TrainingState training_state(Trainer& trainer);

/// save_checkpoint of the trainer's state at its completed step; returns the path.
std::string save_checkpoint(Trainer& trainer, ParallelContext& ctx, const std::string& dir,
                            int64_t keep_last);

/// load_checkpoint into the trainer, which then continues after the loaded step.
void load_checkpoint(Trainer& trainer, ParallelContext& ctx, const std::string& path,
                     const std::string& checkpoint_dir);

}  // namespace trident
