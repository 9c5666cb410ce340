// ProcessGrid: the arithmetic of the (dp, cp, pp, tp) layout — rank <-> coordinates and the
// rank lists of every group — in Megatron's order (tp fastest, then cp, then dp, then pp),
// with expert parallelism carved out of the dp x cp ranks: ep consecutive ones share out
// the experts.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trident {

/// A rank's position in the grid. `dp` counts the dp x cp ranks that hold the same slice of
/// the model (the group whose gradients are reduced together and over which ZeRO shards):
/// the data-parallel rank is dp / cp, the context-parallel rank dp % cp.
struct GridCoord {
  int dp = 0;
  int pp = 0;
  int tp = 0;
};

/// The kinds of process group a rank belongs to.
/// kDp: the dp x cp ranks holding the same slice of the model; kCp: the cp consecutive
/// ranks that split each sequence between them (their attention meets around a ring);
/// kEp: the ep consecutive dp x cp ranks among which a layer's experts are shared out
/// (their tokens meet in all-to-alls); kExpertDp: the ranks holding the same experts,
/// over which those experts' gradients are reduced and their ZeRO shards cut.
enum class GroupKind {
  kWorld,
  kTp,
  kDp,
  kPp,
  kModelParallel,
  kEmbedding,
  kEp,
  kExpertDp,
  kCp,
  kStage,  ///< every rank of one pipeline stage: its dp x cp x tp ranks
};
const char* group_name(GroupKind kind);

/// rank = tp_rank + tp * (cp_rank + cp * (data_rank + data * pp_rank)), where GridCoord::dp
/// = cp_rank + cp * data_rank; ep_rank = coord.dp % ep, expert-dp rank = coord.dp / ep.
/// Pure arithmetic, no MPI.
class ProcessGrid {
 public:
  /// `data`: the data-parallel degree (parallel.dp), `cp` the context-parallel degree;
  /// `ep` divides data * cp (1: every rank holds every expert).
  ProcessGrid(int data, int pp, int tp, int ep = 1, int cp = 1);

  /// The size of the dp group: data x cp ranks.
  int dp() const { return data_ * cp_; }
  /// parallel.dp: how many slices of the global batch a step is cut into.
  int data() const { return data_; }
  int cp() const { return cp_; }
  int pp() const { return pp_; }
  int tp() const { return tp_; }
  int ep() const { return ep_; }
  int data_rank(const GridCoord& c) const { return c.dp / cp_; }
  int cp_rank(const GridCoord& c) const { return c.dp % cp_; }
  int ep_rank(const GridCoord& c) const { return c.dp % ep_; }
  int expert_dp_rank(const GridCoord& c) const { return c.dp / ep_; }
  int world_size() const { return dp() * pp_ * tp_; }

  int rank_of(GridCoord c) const;
  GridCoord coord_of(int rank) const;

  /// The ranks of the group of `kind` that contains `rank`, in group-rank order.
  /// The embedding group of a rank off the first and last stage is empty.
  std::vector<int> group_ranks(GroupKind kind, int rank) const;

  /// One line per rank: "rank 5: dp 0 pp 1 tp 1" (and "cp 1", "ep 1" when they are used).
  std::string describe() const;

 private:
  int data_, pp_, tp_, ep_, cp_;
};

}  // namespace trident
