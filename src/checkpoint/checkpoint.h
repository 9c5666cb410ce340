// Layout-free checkpoints: every parameter and optimizer state is stored as slices of the
// global tensor, so any layout (dp, pp, tp, ZeRO stage) can load any checkpoint; saving is
// atomic. See docs/checkpoints.md.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/trainer_progress.h"  // TrainerProgress
#include "config/input_error.h"           // InputError

namespace trident {
class ParallelContext;
class ModelStage;
class ZeroOptimizer;
struct TrainConfig;

/// The parts of one rank's training that a checkpoint saves and restores: the rank's model
/// stage and optimizer shard, the config the run was built from, the completed steps, and
/// the trainer's progress beyond them (saved from it, loaded into it; may be null).
struct TrainingState {
  ModelStage& model;
  ZeroOptimizer& optimizer;
  const TrainConfig& config;
  int64_t step = 0;
  TrainerProgress* progress = nullptr;
};

/// A checkpoint that cannot be used or written: the message names the file and the fix.
class CheckpointError : public InputError {
 public:
  using InputError::InputError;
};

/// Writes `<dir>/step_<N>/` for completed step N = state.step (collective over the world):
/// a temporary directory, fsync, rename, then the `latest` file; prunes to `keep_last`
/// checkpoints when it is > 0. Returns the checkpoint's path.
///
/// Crash-safety tests kill the ranks at points of a save (TRIDENT_CHECKPOINT_FAULT,
/// common/fault_injection.h).
std::string save_checkpoint(const TrainingState& state, ParallelContext& ctx,
                            const std::string& dir, int64_t keep_last);

/// Takes `dir`/step_<step> out of use (collective; rank 0 renames it to rejected_step_<step>
/// and points `latest` at the newest remaining step_<N>, or removes `latest` when none is
/// left): its weights gave a non-finite loss, so neither "latest" nor "auto" may load it.
/// Returns the new path of the rejected directory ("" when there was none).
std::string reject_checkpoint(ParallelContext& ctx, const std::string& dir, int64_t step);

/// Loads `path` — a checkpoint directory, "latest" (resolved in `checkpoint_dir`), or a
/// Hugging Face GPT-2 directory (model.safetensors + config.json) — into `state`, in
/// `ctx`'s layout: model weights and, for a trident checkpoint, optimizer state. Returns the
/// completed steps to continue from (0 for weights alone, which start fresh moments).
/// Throws (before changing anything) on a missing file, a checksum mismatch, a model shape
/// that differs from state.config, or an unknown format version.
int64_t load_checkpoint(const TrainingState& state, ParallelContext& ctx, const std::string& path,
                        const std::string& checkpoint_dir);

/// Loads only the model weights of `path` (as load_checkpoint resolves it) into `model`,
/// built from `config` in `ctx`'s layout, and the sigmoid router's biases saved with them.
/// Collective over ctx's world; throws before changing anything, on every rank alike.
void load_model_weights(ModelStage& model, ParallelContext& ctx, const TrainConfig& config,
                        const std::string& path, const std::string& checkpoint_dir);

/// What a checkpoint tool keeps of the [parallel] section of the run that saved a
/// checkpoint; the rest of it takes its defaults, since keys such as a schedule with model
/// chunks, sequence parallelism or parameters in a tier hold only in that run's layout.
enum class SavedParallel {
  kNone,           ///< eval: the model alone, in the layout the overrides give
  kStorageLayout,  ///< convert: storage_layout() of it (checkpoint/ownership.h)
};

/// The config a checkpoint's model was trained with (the stored config of a trident
/// checkpoint, or the model of a Hugging Face config.json), keeping `saved` of its
/// [parallel] section, with `overrides` applied ("section.key=value") and validated for
/// `world_size` ranks (0: no world check).
TrainConfig checkpoint_config(const std::string& path, const std::string& checkpoint_dir,
                              const std::vector<std::string>& overrides, int world_size,
                              SavedParallel saved);

}  // namespace trident
