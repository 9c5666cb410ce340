// The phases of a save, shared by the synchronous save and the background one: open a
// temporary directory, collect (and check) this rank's pieces, write its file, and commit
// on rank 0 (index, rename, `latest`, pruning).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"  // TrainingState
#include "checkpoint/index.h"       // CheckpointIndex
#include "checkpoint/writer.h"      // StoredPiece

namespace trident {
class Communicator;
class ParallelContext;
}  // namespace trident

namespace trident::checkpoint {

/// Where a save of step `step` goes: `dir`/step_<step>, first written to `tmp`.
struct SaveTarget {
  std::string dir;
  std::string tmp;
  int64_t step = 0;
  std::string final_name() const { return "step_" + std::to_string(step); }
  std::string final_dir() const { return dir + "/" + final_name(); }
};

/// Rank 0 creates the temporary directory; every rank learns its name. Collective.
SaveTarget begin_save(Communicator& world, const std::string& dir, int64_t step);

/// The boxes this rank stores (views of its live tensors; the optimizer's states in memory).
std::vector<StoredPiece> rank_pieces(const TrainingState& state, const ParallelContext& ctx);

/// Throws when a piece holds a non-finite value: a checkpoint never does (it would replace
/// good checkpoints, with keep_last, by ones that cannot train).
void check_finite(const std::vector<StoredPiece>& pieces, int64_t step);

/// Copies of `pieces` in host memory, so that training can change the originals.
std::vector<StoredPiece> snapshot(const std::vector<StoredPiece>& pieces);

/// Writes this rank's file of `pieces` into target.tmp; returns its record for the index.
/// Honours TRIDENT_CHECKPOINT_FAULT=mid_file.
std::string write_rank_file(const SaveTarget& target, int dp, int pp, int tp,
                            const std::vector<StoredPiece>& pieces);

/// Writes this rank's file into target.tmp straight from its optimizer's states, window by
/// window (visit_states: the nvme tier's states stream through its ring, never whole in
/// memory), checking each window for non-finite values; returns its record for the index.
/// Honours TRIDENT_CHECKPOINT_FAULT=mid_file.
std::string stream_rank_file(const SaveTarget& target, const TrainingState& state,
                             const ParallelContext& ctx);

/// Everything of the index but the tensors and files.
CheckpointIndex describe_state(const TrainingState& state);

/// Removes the temporary directory of a save that failed (every rank's part: ranks write into
/// the one directory of checkpoint.dir), so that its space is free again; the committed
/// checkpoints stay. Rank 0, once every rank has stopped writing; never throws.
void discard_save(const SaveTarget& target);

/// Rank 0, once every rank's file is written: the index from their records, the rename to
/// step_<N>, the `latest` file, and pruning to `keep_last`. Honours the before_index,
/// before_rename and before_latest fault points.
void commit_save(const SaveTarget& target, CheckpointIndex index,
                 const std::vector<std::string>& records, int64_t keep_last);

}  // namespace trident::checkpoint
