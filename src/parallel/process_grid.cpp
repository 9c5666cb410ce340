// Rank arithmetic of the (dp, cp, pp, tp) grid.
#include "parallel/process_grid.h"

#include <sstream>    // std::ostringstream
#include <stdexcept>  // std::invalid_argument

namespace trident {

const char* group_name(GroupKind kind) {
  switch (kind) {
    case GroupKind::kWorld:
      return "world";
    case GroupKind::kTp:
      return "tp";
    case GroupKind::kDp:
      return "dp";
    case GroupKind::kPp:
      return "pp";
    case GroupKind::kModelParallel:
      return "model-parallel";
    case GroupKind::kEmbedding:
      return "embedding";
    case GroupKind::kEp:
      return "ep";
    case GroupKind::kExpertDp:
      return "expert-dp";
    case GroupKind::kCp:
      return "cp";
    case GroupKind::kStage:
      return "stage";
  }
  return "?";
}

ProcessGrid::ProcessGrid(int data, int pp, int tp, int ep, int cp)
    : data_(data), pp_(pp), tp_(tp), ep_(ep), cp_(cp) {
  if (data < 1 || pp < 1 || tp < 1 || cp < 1) {
    throw std::invalid_argument("process grid: dp, cp, pp and tp must each be at least 1 (got dp=" +
                                std::to_string(data) + " cp=" + std::to_string(cp) +
                                " pp=" + std::to_string(pp) + " tp=" + std::to_string(tp) + ")");
  }
  if (ep < 1 || dp() % ep != 0) {
    throw std::invalid_argument("process grid: ep = " + std::to_string(ep) +
                                " must be at least 1 and divide dp * cp = " + std::to_string(dp()));
  }
}

int ProcessGrid::rank_of(GridCoord c) const { return c.tp + tp_ * (c.dp + dp() * c.pp); }

GridCoord ProcessGrid::coord_of(int rank) const {
  GridCoord c;
  c.tp = rank % tp_;
  c.dp = (rank / tp_) % dp();
  c.pp = rank / (tp_ * dp());
  return c;
}

std::vector<int> ProcessGrid::group_ranks(GroupKind kind, int rank) const {
  const GridCoord me = coord_of(rank);
  std::vector<int> ranks;
  switch (kind) {
    case GroupKind::kWorld:
      for (int r = 0; r < world_size(); ++r) ranks.push_back(r);
      break;
    case GroupKind::kTp:
      for (int t = 0; t < tp_; ++t) ranks.push_back(rank_of({me.dp, me.pp, t}));
      break;
    case GroupKind::kDp:
      for (int d = 0; d < dp(); ++d) ranks.push_back(rank_of({d, me.pp, me.tp}));
      break;
    case GroupKind::kCp:
      for (int c = 0; c < cp_; ++c)
        ranks.push_back(rank_of({me.dp - me.dp % cp_ + c, me.pp, me.tp}));
      break;
    case GroupKind::kPp:
      for (int p = 0; p < pp_; ++p) ranks.push_back(rank_of({me.dp, p, me.tp}));
      break;
    case GroupKind::kStage:
      for (int d = 0; d < dp(); ++d)
        for (int t = 0; t < tp_; ++t) ranks.push_back(rank_of({d, me.pp, t}));
      break;
    case GroupKind::kModelParallel:
      for (int p = 0; p < pp_; ++p)
        for (int t = 0; t < tp_; ++t) ranks.push_back(rank_of({me.dp, p, t}));
      break;
    case GroupKind::kEmbedding:
      if (me.pp == 0 || me.pp == pp_ - 1) {
        ranks.push_back(rank_of({me.dp, 0, me.tp}));
        if (pp_ > 1) ranks.push_back(rank_of({me.dp, pp_ - 1, me.tp}));
      }
      break;
    case GroupKind::kEp:
      for (int e = 0; e < ep_; ++e)
        ranks.push_back(rank_of({me.dp - me.dp % ep_ + e, me.pp, me.tp}));
      break;
    case GroupKind::kExpertDp:
      for (int k = 0; k < dp() / ep_; ++k)
        ranks.push_back(rank_of({k * ep_ + me.dp % ep_, me.pp, me.tp}));
      break;
  }
  return ranks;
}

std::string ProcessGrid::describe() const {
  std::ostringstream out;
  for (int r = 0; r < world_size(); ++r) {
    const GridCoord c = coord_of(r);
    out << "rank " << r << ": dp " << data_rank(c) << " pp " << c.pp << " tp " << c.tp;
    if (cp_ > 1) out << " cp " << cp_rank(c);
    if (ep_ > 1) out << " ep " << ep_rank(c);
    out << "\n";
  }
  return out.str();
}

}  // namespace trident
