// ProcessGrid: the arithmetic of the (dp, pp, tp) layout — rank <-> coordinates and the
// rank lists of every group — in Megatron's order (tp fastest, then dp, then pp), with
// expert parallelism carved out of dp: ep consecutive dp ranks share out the experts.
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
/// kEp: the ep consecutive dp ranks among which a layer's experts are shared out (their
/// tokens meet in all-to-alls); kExpertDp: the dp / ep ranks holding the same experts,
/// over which those experts' gradients are reduced and their ZeRO shards cut.
enum class GroupKind { kWorld, kTp, kDp, kPp, kModelParallel, kEmbedding, kEp, kExpertDp };
const char* group_name(GroupKind kind);

/// rank = tp_rank + tp * (dp_rank + dp * pp_rank); ep_rank = dp_rank % ep, expert-dp
/// rank = dp_rank / ep. Pure arithmetic, no MPI.
class ProcessGrid {
 public:
  /// `ep` divides dp (1: every rank holds every expert).
  ProcessGrid(int dp, int pp, int tp, int ep = 1);

  int dp() const { return dp_; }
  int pp() const { return pp_; }
  int tp() const { return tp_; }
  int ep() const { return ep_; }
  int ep_rank(const GridCoord& c) const { return c.dp % ep_; }
  int expert_dp_rank(const GridCoord& c) const { return c.dp / ep_; }
  int world_size() const { return dp_ * pp_ * tp_; }

  int rank_of(GridCoord c) const;
  GridCoord coord_of(int rank) const;

  /// The ranks of the group of `kind` that contains `rank`, in group-rank order.
  /// The embedding group of a rank off the first and last stage is empty.
  std::vector<int> group_ranks(GroupKind kind, int rank) const;

  /// One line per rank: "rank 5: dp 0 pp 1 tp 1".
  std::string describe() const;

 private:
  int dp_, pp_, tp_, ep_;
};

}  // namespace trident
