// Checkpoints written in the background: at a step boundary each rank copies its shard to
// host memory and a thread writes it while training goes on; once every rank's file is
// written (agreed at a later step boundary, in the one all-reduce the boundary makes
// anyway), rank 0 commits it on a thread as a synchronous save does.
#pragma once
#include <cstdint>
#include <exception>
#include <memory>
#include <string>
#include <thread>

#include "checkpoint/checkpoint.h"  // TrainingState

namespace trident {

/// What a committed background save cost: the seconds training stood still for it at step
/// boundaries (snapshot, agreement, gathering the records; waiting for the previous save),
/// and the seconds from its start to its commit.
struct AsyncSaveReport {
  std::string path;
  int64_t step = 0;
  double stall_s = 0.0;
  double elapsed_s = 0.0;
};

/// At most one save in flight; starting the next waits for it. The same atomic commit as
/// save_checkpoint (temporary directory, index with checksums, rename, `latest`), so a crash
/// at any point leaves the last committed checkpoint as `latest`.
class AsyncCheckpointer {
 public:
  AsyncCheckpointer(ParallelContext& ctx, std::string dir, int64_t keep_last);
  /// Joins the threads; a save not yet committed stays a temporary directory that the next
  /// save removes.
  ~AsyncCheckpointer();
  AsyncCheckpointer(const AsyncCheckpointer&) = delete;
  AsyncCheckpointer& operator=(const AsyncCheckpointer&) = delete;

  /// Collective over the world: finishes the save in flight (returned, when there was
  /// one), then snapshots `state` and starts writing it. No collective of its own.
  std::unique_ptr<AsyncSaveReport> start(const TrainingState& state);

  /// This rank's part in the boundary's agreement: 0 when it waits for nothing (idle, its
  /// file written, or — rank 0 — the commit done), 1 while it writes or commits, 2 after
  /// an error. The caller all-reduces it (max) with its other boundary flags.
  double local_state() const;
  /// With the agreed (max) state, at the same boundary on every rank: 0 moves the save on
  /// (to rank 0's commit, or to done: its report is returned); 2 ends the job with the
  /// failing rank's message (collective then).
  std::unique_ptr<AsyncSaveReport> advance(double agreed);
  /// Collective: waits for the save in flight, commits it, and returns its report (null
  /// when none was in flight).
  std::unique_ptr<AsyncSaveReport> finish();
  bool in_flight() const { return phase_ != Phase::kIdle; }

 private:
  enum class Phase { kIdle, kWriting, kCommitting };
  struct Save;
  /// Joins the writer; rank 0 starts the commit thread, which reads the ranks' records
  /// from the temporary directory. Unless the boundary agreed that every rank wrote its
  /// file (`known_ok`), first agrees on any rank's error (collective).
  void hand_to_commit(bool known_ok);
  /// Joins the commit thread (rank 0); unless `known_ok`, agrees on its error (collective).
  std::unique_ptr<AsyncSaveReport> wait_for_commit(bool known_ok);

  ParallelContext& ctx_;
  std::string dir_;
  int64_t keep_last_;
  std::string token_;  // names the temporary directories of this job's saves
  Phase phase_ = Phase::kIdle;
  std::unique_ptr<Save> save_;
};

}  // namespace trident
