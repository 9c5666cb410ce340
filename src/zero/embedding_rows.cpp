// EmbeddingRows: the rows of a tied embedding's lookup gradient, gathered over dp and
// added into the part of the reduced gradient a rank owns.
#include "zero/embedding_rows.h"

#include <ATen/ATen.h>           // at::cat, at::zeros, index_add_
#include <c10/util/Exception.h>  // TORCH_CHECK

#include <algorithm>  // std::min, std::max

#include "parallel/communicator.h"  // Communicator

namespace trident {

void EmbeddingRows::add_rows(const at::Tensor& ids, const at::Tensor& rows) {
  TORCH_CHECK(ids.dim() == 1 && rows.dim() == 2 && ids.size(0) == rows.size(0),
              "EmbeddingRows: ids (N) and rows (N, C) expected, got ", ids.sizes(), " and ",
              rows.sizes());
  ids_.push_back(ids);
  rows_.push_back(rows);
}

void EmbeddingRows::clear() {
  ids_.clear();
  rows_.clear();
}

void EmbeddingRows::fold_into(at::Tensor dst, int64_t begin, int64_t rows, int64_t hidden,
                              Communicator& dp) {
  if (ids_.empty()) return;
  at::Tensor ids = at::cat(ids_);    // (N)
  at::Tensor grad = at::cat(rows_);  // (N, C)
  clear();
  if (dp.size() > 1) {
    // Every dp rank ran the same micro-batch shapes, so all hold N rows.
    const int64_t n = ids.size(0);
    at::Tensor all_ids = at::empty({dp.size() * n}, ids.options());
    at::Tensor all_grad = at::empty({dp.size() * n, hidden}, grad.options());
    WorkHandle a = dp.all_gather(all_ids, ids);
    WorkHandle b = dp.all_gather(all_grad.view({-1}), grad.view({-1}));
    a->wait();
    b->wait();
    ids = all_ids;
    grad = all_grad;
  }
  const int64_t end = std::min(begin + dst.numel(), rows * hidden);  // past it: padding
  if (end <= begin) return;
  const int64_t lo = begin / hidden, hi = (end + hidden - 1) / hidden;  // rows touched
  const at::Tensor pick = ids.ge(lo).logical_and(ids.lt(hi)).nonzero().squeeze(1);
  if (pick.numel() == 0) return;
  // Summed in fp32 at least (fp64 runs in fp64), whatever the gradient's dtype: a frequent
  // token's rows are many. index_add_ on the CPU adds in index order (deterministic).
  const at::ScalarType sum_dtype = dst.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  // One sum per token present (its rows in index order, as a dense (rows, C) index_add_
  // would sum them), then added to its row of dst: the same two roundings as adding a
  // dense gradient, without a buffer of every row the range touches.
  const auto unique = at::_unique(ids.index_select(0, pick), /*sorted=*/true,
                                  /*return_inverse=*/true);
  const at::Tensor tokens = std::get<0>(unique);  // (U) sorted
  at::Tensor sums = at::zeros({tokens.size(0), hidden}, dst.options().dtype(sum_dtype));
  sums.index_add_(0, std::get<1>(unique), grad.index_select(0, pick).to(sum_dtype));  // (U, C)
  // Whole rows inside [begin, end) in one gather-add-scatter; a row cut by either end of
  // the range (a shard's edge) element by element.
  const int64_t first_whole = (begin + hidden - 1) / hidden, last_whole = end / hidden;
  if (last_whole > first_whole) {
    const at::Tensor whole = tokens.ge(first_whole).logical_and(tokens.lt(last_whole));
    const at::Tensor which = whole.nonzero().squeeze(1);
    if (which.numel() > 0) {
      at::Tensor block =
          dst.narrow(0, first_whole * hidden - begin, (last_whole - first_whole) * hidden)
              .view({-1, hidden});  // (whole rows, C)
      const at::Tensor at_rows = tokens.index_select(0, which) - first_whole;
      block.index_copy_(
          0, at_rows,
          block.index_select(0, at_rows).add(sums.index_select(0, which)).to(dst.scalar_type()));
    }
  }
  const at::Tensor cut_tokens = tokens.to(at::kCPU);
  const int64_t* token = cut_tokens.data_ptr<int64_t>();
  for (int64_t j = 0; j < cut_tokens.numel(); ++j) {
    if (token[j] >= first_whole && token[j] < last_whole) continue;
    const int64_t from = std::max(begin, token[j] * hidden);
    const int64_t to = std::min(end, (token[j] + 1) * hidden);
    dst.narrow(0, from - begin, to - from)
        .add_(sums[j].narrow(0, from - token[j] * hidden, to - from));
  }
}

}  // namespace trident
