// Saving during a run: the periodic, final and preemption saves of a Trainer, written
// synchronously or in the background (checkpoint.async), with what each cost the run.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

namespace trident {
class AsyncCheckpointer;
class ParallelContext;
class Trainer;
struct TrainConfig;

/// Rank 0 prints one line per committed save: "saved DIR/step_N (2.31 s)" when synchronous,
/// "saved DIR/step_N (training stalled 0.012 s; written over 1.9 s in the background)".
class RunSaver {
 public:
  RunSaver(const TrainConfig& config, ParallelContext& ctx);
  ~RunSaver();

  /// Whether checkpoint.dir is set (nothing is saved otherwise).
  bool enabled() const { return !dir_.empty(); }
  /// Saves the trainer's state at its completed step (background: starts the save, after
  /// the one in flight is committed). Collective.
  void save(Trainer& trainer);
  /// This rank's background-save state for the boundary's agreement (0 when synchronous).
  double local_state() const;
  /// With the agreed state: advances a background save (rank 0 prints a committed one).
  void advance(double agreed);
  /// Waits for a background save in flight and commits it. Collective.
  void finish();

  /// Takes the checkpoint of `step` out of use when it is the newest save (its weights gave
  /// a non-finite loss in the next step), after committing it if still in flight. Collective.
  void reject(int64_t step);

  /// The step of the newest save started (committed once finish() returns); -1: none.
  int64_t last_step() const { return last_step_; }
  /// The newest committed checkpoint's path ("" before the first, or when reject() took the
  /// only one out of use).
  const std::string& last_path() const { return last_path_; }
  /// Committed saves and the seconds training spent on them (synchronous: the whole save;
  /// background: the stall at step boundaries).
  int64_t saves() const { return saves_; }
  double stall_s() const { return stall_s_; }

 private:
  void report(const std::string& path, double stall_s, double elapsed_s, bool background);

  ParallelContext& ctx_;
  std::string dir_;
  int64_t keep_last_ = 0;
  std::unique_ptr<AsyncCheckpointer> async_;
  int64_t last_step_ = -1;
  std::string last_path_;
  int64_t saves_ = 0;
  double stall_s_ = 0.0;
};

}  // namespace trident
