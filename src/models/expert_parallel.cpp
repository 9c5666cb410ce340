// The all-to-all dispatch and combine of expert parallelism.
#include "models/expert_parallel.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>  // torch::autograd::Function

#include <numeric>  // std::accumulate

#include "parallel/communicator.h"

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The rows received for `send_rows` of `input`, as a new tensor.
at::Tensor exchange(const at::Tensor& input, Communicator& group,
                    const std::vector<int64_t>& send_rows, const std::vector<int64_t>& recv_rows) {
  std::vector<int64_t> shape = input.sizes().vec();
  shape[0] = std::accumulate(recv_rows.begin(), recv_rows.end(), int64_t{0});
  at::Tensor output = at::empty(shape, input.options());
  group.all_to_all(output, input.contiguous(), send_rows, recv_rows)->wait();
  return output;
}

struct AllToAllRows : torch::autograd::Function<AllToAllRows> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& input, Communicator* group,
                            const std::vector<int64_t>& send_rows,
                            const std::vector<int64_t>& recv_rows) {
    ctx->saved_data["group"] = static_cast<int64_t>(reinterpret_cast<intptr_t>(group));
    ctx->saved_data["send"] = send_rows;
    ctx->saved_data["recv"] = recv_rows;
    return exchange(input, *group, send_rows, recv_rows);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* group =
        reinterpret_cast<Communicator*>(static_cast<intptr_t>(ctx->saved_data["group"].toInt()));
    const std::vector<int64_t> send = ctx->saved_data["send"].toIntVector();
    const std::vector<int64_t> recv = ctx->saved_data["recv"].toIntVector();
    return {exchange(grads[0], *group, recv, send), at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

}  // namespace

at::Tensor all_to_all_rows(const at::Tensor& input, Communicator& group,
                           const std::vector<int64_t>& send_rows,
                           const std::vector<int64_t>& recv_rows) {
  return AllToAllRows::apply(input, &group, send_rows, recv_rows);
}

std::vector<at::Tensor> run_experts_over_ep(
    Communicator& ep, const std::vector<at::Tensor>& inputs,
    const std::function<at::Tensor(int64_t, const at::Tensor&)>& expert) {
  const int64_t P = ep.size(), E = static_cast<int64_t>(inputs.size()), local = E / P;
  TORCH_CHECK(E % P == 0, "expert parallelism: ", E, " experts do not split over ep = ", P);
  // How many rows each rank sends each of the group's experts: rank s's row for rank q
  // is what s sends q's experts.
  std::vector<int64_t> counts;
  for (const at::Tensor& x : inputs) counts.push_back(x.size(0));
  const at::Tensor mine = at::tensor(counts, at::kLong).view({P, local});
  at::Tensor theirs = at::empty({P, local}, at::kLong);
  const std::vector<int64_t> one_row(static_cast<size_t>(P), 1);
  ep.all_to_all(theirs, mine, one_row, one_row)->wait();
  const auto from = theirs.accessor<int64_t, 2>();  // [source rank][local expert]

  std::vector<int64_t> send_rows(static_cast<size_t>(P), 0), recv_rows(static_cast<size_t>(P), 0);
  for (int64_t e = 0; e < E; ++e) send_rows[static_cast<size_t>(e / local)] += counts[e];
  // Where rank s's rows for local expert j start in what this rank receives (rank-major).
  std::vector<int64_t> start(static_cast<size_t>(P * local));
  int64_t offset = 0;
  for (int64_t s = 0; s < P; ++s)
    for (int64_t j = 0; j < local; ++j) {
      start[static_cast<size_t>(s * local + j)] = offset;
      offset += from[s][j];
      recv_rows[static_cast<size_t>(s)] += from[s][j];
    }

  // Where each local expert's rows lie in what this rank receives: expert after expert,
  // each from every rank, rank after rank.
  std::vector<int64_t> order, first(static_cast<size_t>(local + 1), 0);
  order.reserve(static_cast<size_t>(offset));
  for (int64_t j = 0; j < local; ++j) {
    for (int64_t s = 0; s < P; ++s)
      for (int64_t r = 0; r < from[s][j]; ++r)
        order.push_back(start[static_cast<size_t>(s * local + j)] + r);
    first[static_cast<size_t>(j + 1)] = static_cast<int64_t>(order.size());
  }

  const at::Tensor received = all_to_all_rows(at::cat(inputs), ep, send_rows, recv_rows);
  const at::Tensor where = at::tensor(order, at::kLong).to(received.device());
  std::vector<at::Tensor> outputs;
  for (int64_t j = 0; j < local; ++j) {
    const int64_t begin = first[static_cast<size_t>(j)];
    const at::Tensor rows = where.narrow(0, begin, first[static_cast<size_t>(j + 1)] - begin);
    outputs.push_back(expert(j, received.index_select(0, rows)));
  }
  const at::Tensor results = at::zeros_like(received).index_copy(0, where, at::cat(outputs));
  // Back to the ranks the rows came from, in the order they were sent.
  const at::Tensor returned = all_to_all_rows(results, ep, recv_rows, send_rows);
  return returned.split_with_sizes(counts);
}

}  // namespace trident
