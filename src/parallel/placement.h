// Where the ranks of a grid run: each rank's node (its host name) and, for each kind of
// group, whether a group spans nodes. tp should stay inside a node, then pp, then dp
// (Megatron's rule); the training header reports what the job got.
#pragma once
#include <string>  // std::string
#include <vector>  // std::vector

#include "parallel/process_grid.h"  // ProcessGrid, GroupKind

namespace trident {
class Communicator;

struct Placement {
  int nodes = 1;
  int max_ranks_per_node = 1;
  bool tp_across = false, dp_across = false, pp_across = false;
  bool cp_across = false;
  int cp = 1;  // context-parallel ranks per sequence (described only when more than one)

  /// "2 nodes x 4 ranks: tp inside nodes, dp inside nodes, pp across nodes".
  std::string describe() const;
};

/// The placement of `grid` when world rank r runs on node `node_of_rank[r]`.
Placement placement_of(const ProcessGrid& grid, const std::vector<std::string>& node_of_rank);

/// Every world rank's node name (its host name), in rank order. Collective over `world`.
std::vector<std::string> node_names(Communicator& world);

}  // namespace trident
