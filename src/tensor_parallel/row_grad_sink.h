// RowGradSink: where an embedding lookup may send its weight gradient as the rows it
// touched instead of a dense (V, C) gradient, so that a tied embedding's dense part (the
// output head's, ready first in backward) can be reduced over dp while backward goes on.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

namespace trident {

/// Receives, per backward of an embedding lookup, the gradient of its weight as rows:
/// weight.grad would be index_add(0, ids, rows). ZeroOptimizer implements it.
class RowGradSink {
 public:
  virtual ~RowGradSink() = default;
  /// `ids` (N) int64, local rows of the weight; `rows` (N, C) the gradient of each lookup.
  virtual void add_rows(const at::Tensor& ids, const at::Tensor& rows) = 0;
};

/// at::embedding(weight, ids) whose backward hands (ids, grad) to `sink` and gives the
/// weight no gradient: the weight is read outside the graph, so its AccumulateGrad waits
/// for no contribution from here. `anchor` is a scalar that requires grad, to put the
/// lookup into the graph; its gradient is undefined.
at::Tensor embedding_with_row_grads(const at::Tensor& weight, const at::Tensor& ids,
                                    const at::Tensor& anchor, RowGradSink& sink);

}  // namespace trident
