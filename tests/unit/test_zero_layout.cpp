// Single-process tests of the flat-buffer arithmetic: bucket membership in backward order,
// per-bucket padding to a multiple of dp, dp shard ranges and the shard space.
#include <gtest/gtest.h>

#include <stdexcept>

#include "zero/bucket_layout.h"

namespace trident {
namespace {

// Parameters of 5, 3, 7 and 2 elements, buckets of at least 6, dp = 4. From the last
// parameter: {2 + 7} closes bucket 0 (9 -> padded 12), {3 + 5} is bucket 1 (8).
TEST(ZeroLayout, buckets_fill_from_the_last_parameter_and_pad_to_dp) {
  const BucketLayout layout({5, 3, 7, 2}, 6, 4);
  ASSERT_EQ(layout.buckets().size(), 2u);
  const Bucket& b0 = layout.buckets()[0];
  const Bucket& b1 = layout.buckets()[1];
  EXPECT_EQ(b0.params, (std::vector<size_t>{2, 3}));
  EXPECT_EQ(b1.params, (std::vector<size_t>{0, 1}));
  // The buffer reads in construction order: bucket 1 first, then bucket 0 and its padding.
  EXPECT_EQ(b1.offset, 0);
  EXPECT_EQ(b1.numel, 8);
  EXPECT_EQ(b0.offset, 8);
  EXPECT_EQ(b0.data_numel, 9);
  EXPECT_EQ(b0.numel, 12);
  EXPECT_EQ(b0.shard_numel, 3);
  EXPECT_EQ(layout.numel(), 20);
  EXPECT_EQ(layout.data_numel(), 17);
  EXPECT_EQ(layout.max_bucket_numel(), 12);
  EXPECT_EQ(layout.places()[0].offset, 0);
  EXPECT_EQ(layout.places()[1].offset, 5);
  EXPECT_EQ(layout.places()[2].offset, 8);
  EXPECT_EQ(layout.places()[3].offset, 15);
  EXPECT_EQ(layout.places()[3].bucket, 0u);
}

TEST(ZeroLayout, shards_split_each_bucket_evenly_and_cover_it_once) {
  const BucketLayout layout({5, 3, 7, 2}, 6, 4);
  for (size_t b = 0; b < 2; ++b) {
    int64_t next = layout.buckets()[b].offset;
    for (int r = 0; r < 4; ++r) {
      const Range s = layout.shard(b, r);
      EXPECT_EQ(s.begin, next);
      EXPECT_EQ(s.size(), layout.buckets()[b].shard_numel);
      next = s.end;
    }
    EXPECT_EQ(next, layout.buckets()[b].offset + layout.buckets()[b].numel);
  }
  EXPECT_EQ(layout.shard_space_offset(0), 0);
  EXPECT_EQ(layout.shard_space_offset(1), 3);
  EXPECT_EQ(layout.shard_space_numel(), 5);
  // Parameter 2 ([8, 15)) meets rank 2's shard of bucket 0 ([14, 17)) in [14, 15).
  const Range part = layout.param_part(2, layout.shard(0, 2));
  EXPECT_EQ(part.begin, 14);
  EXPECT_EQ(part.end, 15);
  EXPECT_EQ(layout.param_part(3, layout.shard(0, 0)).size(), 0);
}

TEST(ZeroLayout, dp1_and_oversized_parameters) {
  const BucketLayout one({10, 20}, 1 << 20, 1);
  ASSERT_EQ(one.buckets().size(), 1u);
  EXPECT_EQ(one.numel(), 30);
  // A parameter larger than the bucket size closes its bucket alone, never split; the
  // next bucket (3 elements) is still open when the 100-element parameter arrives.
  const BucketLayout big({100, 3, 200}, 50, 8);
  ASSERT_EQ(big.buckets().size(), 2u);
  EXPECT_EQ(big.buckets()[0].params, (std::vector<size_t>{2}));
  EXPECT_EQ(big.buckets()[1].params, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(big.buckets()[0].numel, 200);
  EXPECT_EQ(big.buckets()[1].numel, 104);
  EXPECT_EQ(big.buckets()[0].offset, 104);
  EXPECT_EQ(big.numel(), 104 + 200);
  EXPECT_THROW(BucketLayout({1}, 0, 2), std::invalid_argument);
  const BucketLayout empty({}, 10, 4);
  EXPECT_EQ(empty.numel(), 0);
  EXPECT_TRUE(empty.buckets().empty());
}

}  // namespace
}  // namespace trident
