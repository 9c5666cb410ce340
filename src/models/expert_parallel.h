// Expert parallelism: a layer's E experts shared out among the ranks of an ep group, rank q
// holding experts [q E/ep, (q+1) E/ep); each rank's tokens travel to their experts' rank
// and back by all-to-all, whose backward sends the gradients the reverse way.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>
#include <functional>
#include <vector>

namespace trident {
class Communicator;

/// Rows of `input` sent by an all-to-all over `group` (Communicator::all_to_all): the
/// result holds the rows received, in group-rank order. Differentiable: the backward sends
/// the gradient rows back where they came from. Collective over `group`.
at::Tensor all_to_all_rows(const at::Tensor& input, Communicator& group,
                           const std::vector<int64_t>& send_rows,
                           const std::vector<int64_t>& recv_rows);

/// Runs the experts of the whole ep group on this rank's tokens: `inputs[e]` are the rows
/// this rank sends to expert e (all E of the layer, rows (n_e, C)); `expert(j, x)` runs this
/// rank's local expert j on the rows x. Returns each expert's output for `inputs[e]`, row for
/// row. An expert sees the rows of every rank of the group, rank after rank, each rank's in
/// its own order. Collective over `ep`: two all-to-alls forward (one of the counts), and one
/// more in backward.
std::vector<at::Tensor> run_experts_over_ep(
    Communicator& ep, const std::vector<at::Tensor>& inputs,
    const std::function<at::Tensor(int64_t, const at::Tensor&)>& expert);

}  // namespace trident
