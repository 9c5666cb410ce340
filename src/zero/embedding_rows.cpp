// EmbeddingRows: the rows of a tied embedding's lookup gradient, gathered over dp and
// added into the part of the reduced gradient a rank owns.
#include "zero/embedding_rows.h"

#include <ATen/ATen.h>           // at::cat, at::zeros, index_add_
#include <c10/util/Exception.h>  // TORCH_CHECK

#include <algorithm>  // std::min

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
  // Summed in fp32 at least (fp64 runs in fp64), whatever the gradient's dtype: a frequent
  // token's rows are many. index_add_ on the CPU adds in index order (deterministic).
  const at::ScalarType sum_dtype = dst.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  at::Tensor dense = at::zeros({hi - lo, hidden}, dst.options().dtype(sum_dtype));  // (hi-lo, C)
  dense.index_add_(0, ids.index_select(0, pick) - lo, grad.index_select(0, pick).to(sum_dtype));
  dst.narrow(0, 0, end - begin).add_(dense.view({-1}).narrow(0, begin - lo * hidden, end - begin));
}

}  // namespace trident
