// Placement: which groups of a layout cross nodes, for nodes filled rank by rank (the
// "by slot" mapping of mpirun and Slurm's block distribution) and for a bad mapping.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "parallel/placement.h"

namespace trident {
namespace {

/// Node names of `world` ranks filled `per_node` at a time: node0, node0, ..., node1, ...
std::vector<std::string> by_slot(int world, int per_node) {
  std::vector<std::string> nodes;
  for (int r = 0; r < world; ++r) nodes.push_back("node" + std::to_string(r / per_node));
  return nodes;
}

TEST(Placement, dp2_pp2_tp2_on_2_nodes_of_4_keeps_tp_and_dp_inside) {
  const Placement p = placement_of(ProcessGrid(2, 2, 2), by_slot(8, 4));
  EXPECT_EQ(p.nodes, 2);
  EXPECT_EQ(p.max_ranks_per_node, 4);
  EXPECT_FALSE(p.tp_across);
  EXPECT_FALSE(p.dp_across);
  EXPECT_TRUE(p.pp_across);
  EXPECT_EQ(p.describe(), "2 nodes x 4 ranks: tp inside nodes, dp inside nodes, pp across nodes");
}

TEST(Placement, dp2_pp2_tp2_on_4_nodes_of_2_keeps_only_tp_inside) {
  const Placement p = placement_of(ProcessGrid(2, 2, 2), by_slot(8, 2));
  EXPECT_FALSE(p.tp_across);
  EXPECT_TRUE(p.dp_across);
  EXPECT_TRUE(p.pp_across);
}

TEST(Placement, tp4_round_robin_over_2_nodes_puts_tp_across) {
  std::vector<std::string> nodes;
  for (int r = 0; r < 8; ++r) nodes.push_back("node" + std::to_string(r % 2));
  const Placement p = placement_of(ProcessGrid(2, 1, 4), nodes);
  EXPECT_TRUE(p.tp_across);
  EXPECT_FALSE(p.dp_across);  // dp partners are 4 ranks apart: the same node, round robin
  EXPECT_FALSE(p.pp_across);  // pp = 1: every pp group is one rank
}

TEST(Placement, one_node_has_nothing_across) {
  const Placement p = placement_of(ProcessGrid(2, 2, 2), by_slot(8, 8));
  EXPECT_EQ(p.describe(), "1 node x 8 ranks: tp inside nodes, dp inside nodes, pp inside nodes");
}

}  // namespace
}  // namespace trident
