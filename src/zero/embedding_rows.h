// EmbeddingRows: the token lookup's share of a tied embedding's gradient, kept as rows
// while backward runs and folded into the reduced gradient once the step's backward is
// done; the head's dense share is reduced over dp as soon as backward produces it.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>
#include <vector>

#include "tensor_parallel/row_grad_sink.h"  // RowGradSink

namespace trident {
class Communicator;

class EmbeddingRows : public RowGradSink {
 public:
  void add_rows(const at::Tensor& ids, const at::Tensor& rows) override;
  /// Gathers every dp rank's rows and adds those that fall in elements
  /// [begin, begin + dst.numel()) of the flattened (rows, hidden) weight into `dst`
  /// (elements past rows x hidden are padding and get nothing). Collective over `dp`;
  /// forgets the rows.
  void fold_into(at::Tensor dst, int64_t begin, int64_t rows, int64_t hidden, Communicator& dp);
  /// Drops the rows of a step that is not applied.
  void clear();
  bool empty() const { return ids_.empty(); }

 private:
  std::vector<at::Tensor> ids_;   // per lookup: (N) int64
  std::vector<at::Tensor> rows_;  // per lookup: (N, hidden)
};

}  // namespace trident
