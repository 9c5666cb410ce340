// ProcessGrid: the arithmetic of the (dp, pp, tp) layout — rank <-> coordinates and the
// rank lists of every group — in Megatron's order (tp fastest, then dp, then pp).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trident {

/// A rank's position in the grid.
struct GridCoord {
  int dp = 0;
  int pp = 0;
  int tp = 0;
};

/// The kinds of process group a rank belongs to.
enum class GroupKind { kWorld, kTp, kDp, kPp, kModelParallel, kEmbedding };
const char* group_name(GroupKind kind);

/// rank = tp_rank + tp * (dp_rank + dp * pp_rank). Pure arithmetic, no MPI.
class ProcessGrid {
 public:
  ProcessGrid(int dp, int pp, int tp);

  int dp() const { return dp_; }
  int pp() const { return pp_; }
  int tp() const { return tp_; }
  int world_size() const { return dp_ * pp_ * tp_; }

  int rank_of(GridCoord c) const;
  GridCoord coord_of(int rank) const;

  /// The ranks of the group of `kind` that contains `rank`, in group-rank order.
  /// The embedding group of a rank off the first and last stage is empty.
  std::vector<int> group_ranks(GroupKind kind, int rank) const;

  /// One line per rank: "rank 5: dp 0 pp 1 tp 1".
  std::string describe() const;

 private:
  int dp_, pp_, tp_;
};

}  // namespace trident
