// Where the ranks of a grid run, from each rank's host name.
#include "parallel/placement.h"

#include <unistd.h>  // gethostname

#include <algorithm>  // std::max
#include <map>        // std::map
#include <set>        // std::set

#include "parallel/communicator.h"  // Communicator::all_gather_bytes

namespace trident {

namespace {

/// Whether some group of `kind` holds ranks of more than one node.
bool crosses_nodes(const ProcessGrid& grid, GroupKind kind,
                   const std::vector<std::string>& node_of_rank) {
  for (int r = 0; r < grid.world_size(); ++r) {
    std::set<std::string> nodes;
    for (const int member : grid.group_ranks(kind, r)) nodes.insert(node_of_rank[member]);
    if (nodes.size() > 1) return true;
  }
  return false;
}

}  // namespace

std::string Placement::describe() const {
  auto where = [](bool across) { return across ? "across nodes" : "inside nodes"; };
  return std::to_string(nodes) + (nodes == 1 ? " node" : " nodes") + " x " +
         std::to_string(max_ranks_per_node) + (max_ranks_per_node == 1 ? " rank" : " ranks") +
         ": tp " + where(tp_across) + (cp > 1 ? std::string(", cp ") + where(cp_across) : "") +
         ", dp " + where(dp_across) + ", pp " + where(pp_across);
}

Placement placement_of(const ProcessGrid& grid, const std::vector<std::string>& node_of_rank) {
  Placement p;
  std::map<std::string, int> per_node;
  for (int r = 0; r < grid.world_size(); ++r) per_node[node_of_rank[r]] += 1;
  p.nodes = static_cast<int>(per_node.size());
  for (const auto& [node, ranks] : per_node)
    p.max_ranks_per_node = std::max(p.max_ranks_per_node, ranks);
  p.tp_across = crosses_nodes(grid, GroupKind::kTp, node_of_rank);
  p.dp_across = crosses_nodes(grid, GroupKind::kDp, node_of_rank);
  p.pp_across = crosses_nodes(grid, GroupKind::kPp, node_of_rank);
  p.cp = grid.cp();
  p.cp_across = crosses_nodes(grid, GroupKind::kCp, node_of_rank);
  return p;
}

std::vector<std::string> node_names(Communicator& world) {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return world.all_gather_bytes(host);
}

}  // namespace trident
