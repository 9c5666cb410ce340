// Saving and resuming a Trainer: hands the checkpoint module the parts it stores (model
// stage, optimizer shard, config, step) and restores the trainer's step from what it loads.
#pragma once
#include <cstdint>  // int64_t
#include <string>   // std::string

#include "checkpoint/checkpoint.h"  // TrainingState, save_checkpoint, load_checkpoint

namespace trident {
class Trainer;

/// checkpoint.load = "auto": resume from the newest valid checkpoint, else start fresh.
constexpr const char* kAutoLoad = "auto";

/// The trainer's parts, as a checkpoint holds them.
TrainingState training_state(Trainer& trainer);

/// save_checkpoint of the trainer's state at its completed step; returns the path.
std::string save_checkpoint(Trainer& trainer, ParallelContext& ctx, const std::string& dir,
                            int64_t keep_last);

/// load_checkpoint into the trainer, which then continues after the loaded step.
void load_checkpoint(Trainer& trainer, ParallelContext& ctx, const std::string& path,
                     const std::string& checkpoint_dir);

/// checkpoint.load = "auto": loads the newest checkpoint (step_<N>/, highest N) of
/// `checkpoint_dir` that loads, and returns its path; one that fails its checks (a damaged
/// file, a checksum) is skipped with a warning on rank 0, and the next older is tried.
/// Returns "" when the directory holds no checkpoint (the trainer starts fresh); throws a
/// CheckpointError when it holds some and none loads. Collective over ctx's world.
std::string resume_auto(Trainer& trainer, ParallelContext& ctx, const std::string& checkpoint_dir);

/// When the checkpoint at `path` was saved in another layout than `config`'s (dp, pp, tp,
/// ZeRO stage, ranks), a sentence naming both, as a resumed run's header prints it (a job
/// requeued onto fewer or more nodes); "" when the layouts are the same or the checkpoint
/// records none (a Hugging Face directory). Reads the index only.
std::string layout_change(const std::string& path, const std::string& checkpoint_dir,
                          const TrainConfig& config);

/// When the checkpoint at `path` was saved under another learning-rate schedule than
/// `config`'s (a longer train.steps, another kind), a sentence naming both and the rate the
/// next step trains at under each, as a resumed run's header prints it; "" when they agree
/// or the checkpoint records none. Reads the index only.
std::string schedule_change(const std::string& path, const std::string& checkpoint_dir,
                            const TrainConfig& config);

/// The loss-spike guard's rollback: as resume_auto, over the checkpoints the guard marked
/// good (saved when no step had been skipped shortly before). "" when there is none.
std::string roll_back(Trainer& trainer, ParallelContext& ctx, const std::string& checkpoint_dir);

}  // namespace trident
