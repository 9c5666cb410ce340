// ProcessGrid: coordinates and group rank lists for several layouts, against Megatron's
// order written out by hand.
#include <gtest/gtest.h>

#include <set>

#include "parallel/process_grid.h"

namespace trident {
namespace {

struct Layout {
  int dp, pp, tp;
};

class EveryLayout : public ::testing::TestWithParam<Layout> {};

TEST_P(EveryLayout, coordinates_round_trip_in_megatron_order) {
  const auto [dp, pp, tp] = GetParam();
  ProcessGrid grid(dp, pp, tp);
  ASSERT_EQ(grid.world_size(), dp * pp * tp);
  int rank = 0;
  for (int p = 0; p < pp; ++p)
    for (int d = 0; d < dp; ++d)
      for (int t = 0; t < tp; ++t, ++rank) {  // tp fastest, then dp, then pp
        EXPECT_EQ(grid.rank_of({d, p, t}), rank);
        const GridCoord c = grid.coord_of(rank);
        EXPECT_EQ(c.dp, d);
        EXPECT_EQ(c.pp, p);
        EXPECT_EQ(c.tp, t);
      }
}

TEST_P(EveryLayout, groups_partition_the_world_and_vary_one_coordinate) {
  const auto [dp, pp, tp] = GetParam();
  ProcessGrid grid(dp, pp, tp);
  const std::pair<GroupKind, int> kinds[] = {{GroupKind::kTp, tp},
                                             {GroupKind::kDp, dp},
                                             {GroupKind::kPp, pp},
                                             {GroupKind::kModelParallel, tp * pp},
                                             {GroupKind::kWorld, dp * pp * tp}};
  for (const auto& [kind, size] : kinds) {
    for (int r = 0; r < grid.world_size(); ++r) {
      const auto members = grid.group_ranks(kind, r);
      ASSERT_EQ(static_cast<int>(members.size()), size) << group_name(kind);
      EXPECT_EQ(std::set<int>(members.begin(), members.end()).count(r), 1u);
      const GridCoord me = grid.coord_of(r);
      for (int m : members) {
        const GridCoord c = grid.coord_of(m);
        // The group of m is the group of r.
        EXPECT_EQ(grid.group_ranks(kind, m), members);
        if (kind == GroupKind::kTp) EXPECT_TRUE(c.dp == me.dp && c.pp == me.pp);
        if (kind == GroupKind::kDp) EXPECT_TRUE(c.tp == me.tp && c.pp == me.pp);
        if (kind == GroupKind::kPp) EXPECT_TRUE(c.tp == me.tp && c.dp == me.dp);
        if (kind == GroupKind::kModelParallel) EXPECT_EQ(c.dp, me.dp);
      }
    }
  }
}

TEST_P(EveryLayout, embedding_group_is_first_and_last_stage) {
  const auto [dp, pp, tp] = GetParam();
  ProcessGrid grid(dp, pp, tp);
  for (int r = 0; r < grid.world_size(); ++r) {
    const GridCoord c = grid.coord_of(r);
    const auto members = grid.group_ranks(GroupKind::kEmbedding, r);
    if (c.pp != 0 && c.pp != pp - 1) {
      EXPECT_TRUE(members.empty());
      continue;
    }
    std::vector<int> expected{grid.rank_of({c.dp, 0, c.tp})};
    if (pp > 1) expected.push_back(grid.rank_of({c.dp, pp - 1, c.tp}));
    EXPECT_EQ(members, expected);
  }
}

INSTANTIATE_TEST_SUITE_P(Grid, EveryLayout,
                         ::testing::Values(Layout{1, 1, 1}, Layout{2, 2, 2}, Layout{1, 4, 2},
                                           Layout{4, 1, 2}, Layout{2, 4, 1}, Layout{3, 2, 2}),
                         [](const auto& info) {
                           const Layout& l = info.param;
                           return "dp" + std::to_string(l.dp) + "_pp" + std::to_string(l.pp) +
                                  "_tp" + std::to_string(l.tp);
                         });

TEST(Grid, dp2_pp2_tp2_rank5_by_hand) {
  ProcessGrid grid(2, 2, 2);
  const GridCoord c = grid.coord_of(5);  // 5 = 1 + 2*(0 + 2*1)
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.dp, 0);
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(grid.group_ranks(GroupKind::kTp, 5), (std::vector<int>{4, 5}));
  EXPECT_EQ(grid.group_ranks(GroupKind::kDp, 5), (std::vector<int>{5, 7}));
  EXPECT_EQ(grid.group_ranks(GroupKind::kPp, 5), (std::vector<int>{1, 5}));
  EXPECT_EQ(grid.group_ranks(GroupKind::kModelParallel, 5), (std::vector<int>{0, 1, 4, 5}));
}

// dp 2 x cp 2 x pp 2 x tp 2: the cp ranks of a sequence are consecutive after tp (inside a
// node before dp), and the dp group — gradients, ZeRO shards — spans dp x cp.
TEST(Grid, dp2_cp2_pp2_tp2_by_hand) {
  ProcessGrid grid(2, 2, 2, /*ep=*/1, /*cp=*/2);
  EXPECT_EQ(grid.world_size(), 16);
  const GridCoord c = grid.coord_of(11);  // 11 = 1 + 2*(1 + 4*1): tp 1, dp x cp 1, pp 1
  EXPECT_EQ(c.tp, 1);
  EXPECT_EQ(c.pp, 1);
  EXPECT_EQ(grid.cp_rank(c), 1);
  EXPECT_EQ(grid.data_rank(c), 0);
  EXPECT_EQ(grid.group_ranks(GroupKind::kCp, 11), (std::vector<int>{9, 11}));
  EXPECT_EQ(grid.group_ranks(GroupKind::kDp, 11), (std::vector<int>{9, 11, 13, 15}));
  EXPECT_EQ(grid.group_ranks(GroupKind::kTp, 11), (std::vector<int>{10, 11}));
  EXPECT_EQ(grid.group_ranks(GroupKind::kPp, 11), (std::vector<int>{3, 11}));
  const GridCoord d = grid.coord_of(13);  // dp x cp 2: data rank 1, cp rank 0
  EXPECT_EQ(grid.data_rank(d), 1);
  EXPECT_EQ(grid.cp_rank(d), 0);
  EXPECT_EQ(grid.group_ranks(GroupKind::kCp, 13), (std::vector<int>{13, 15}));
  // Every rank is in exactly one cp group of cp members.
  std::vector<int> seen(16, 0);
  for (int r = 0; r < 16; ++r)
    if (grid.cp_rank(grid.coord_of(r)) == 0)
      for (int m : grid.group_ranks(GroupKind::kCp, r)) seen[m] += 1;
  EXPECT_EQ(seen, std::vector<int>(16, 1));
  EXPECT_THROW(ProcessGrid(1, 1, 1, 1, 0), std::invalid_argument);
}

TEST(Grid, rejects_a_zero_dimension) { EXPECT_THROW(ProcessGrid(0, 1, 1), std::invalid_argument); }

}  // namespace
}  // namespace trident
