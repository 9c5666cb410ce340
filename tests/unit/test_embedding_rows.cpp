// EmbeddingRows::fold_into against the dense gradient it stands for: each token's rows
// summed in index order and added to the destination, bit for bit, over ranges that start
// and end inside rows (a dp shard's edges) and past the last row (the padding).
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include <algorithm>  // std::max, std::min
#include <cstdint>

#include "parallel/local_communicator.h"  // LocalCommunicator
#include "zero/embedding_rows.h"          // EmbeddingRows

namespace trident {
namespace {

constexpr int64_t kRows = 10, kHidden = 4;

/// What the rows stand for: the lookup's dense (rows, hidden) gradient, flattened.
at::Tensor dense_gradient(const at::Tensor& ids, const at::Tensor& rows) {
  return at::zeros({kRows, kHidden}, rows.options()).index_add_(0, ids, rows).view({-1});
}

/// Folds two lookups' rows into elements [begin, begin + n) of a flattened weight that
/// already holds `start` (the head's share), and checks the result bit for bit against
/// `start` plus the dense gradient (nothing past kRows x kHidden: padding).
void expect_fold_matches_dense(int64_t begin, int64_t n) {
  at::manual_seed(3);
  const auto opts = at::TensorOptions().dtype(at::kDouble);
  const at::Tensor ids_a = at::tensor({7, 1, 7, 3, 9, 1}, at::kLong);
  const at::Tensor ids_b = at::tensor({1, 0, 7, 2}, at::kLong);
  const at::Tensor rows_a = at::randn({6, kHidden}, opts), rows_b = at::randn({4, kHidden}, opts);
  const at::Tensor start = at::randn({n}, opts);

  at::Tensor want = start.clone();
  const at::Tensor dense = dense_gradient(at::cat({ids_a, ids_b}), at::cat({rows_a, rows_b}));
  const int64_t inside = std::max<int64_t>(0, std::min(n, kRows * kHidden - begin));
  want.narrow(0, 0, inside).add_(dense.narrow(0, begin, inside));

  EmbeddingRows rows;
  rows.add_rows(ids_a, rows_a);
  rows.add_rows(ids_b, rows_b);
  at::Tensor got = start.clone();
  LocalCommunicator dp("dp", 0);
  rows.fold_into(got, begin, kRows, kHidden, dp);
  EXPECT_TRUE(at::equal(got, want)) << "begin " << begin << ", " << n << " elements:\n"
                                    << got << "\nwant\n"
                                    << want;
  EXPECT_TRUE(rows.empty());  // folded rows are forgotten
}

TEST(EmbeddingRows, whole_weight_matches_the_dense_gradient) {
  expect_fold_matches_dense(0, kRows * kHidden);
}

TEST(EmbeddingRows, range_cutting_rows_at_both_ends_matches_the_dense_gradient) {
  // Elements 6..30: row 1 from its third element, rows 2..6 whole, row 7 up to its third.
  expect_fold_matches_dense(6, 25);
  // Inside one row (row 7's middle two elements).
  expect_fold_matches_dense(29, 2);
}

TEST(EmbeddingRows, range_past_the_last_row_leaves_the_padding_alone) {
  // Rows 8 and 9 (row 9 cut), then 6 elements of padding.
  expect_fold_matches_dense(34, 12);
}

}  // namespace
}  // namespace trident
