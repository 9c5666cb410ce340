// The MoE combine at ep 2 sums a token's expert outputs in increasing expert index, as the
// single process does, whichever rank computed them: a case built so that any other order
// gives another number. Three experts chosen with equal weights output +a, b and -a
// (a = 1e20 times silu(1) / 3, b about 0.24): in index order (a + b) - a rounds to 0, while
// summing the two large ones first, as a rank that took its own expert first would, gives b.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/csrc/autograd/grad_mode.h>  // torch::NoGradGuard

#include "models/moe.h"  // MoeMlp
#include "mpi_cases.h"   // register_mpi_cases
#include "parallel/parallel_context.h"

namespace trident {
namespace {

const bool kRegistered = testing::register_mpi_cases({
    {"moe_combine_order_ep2", 2, "MoeCombine.*"},
});

/// One token of width 1 through 4 experts, top 3, with weights that make the order of the
/// sum visible; `ep` null: every expert here.
double moe_output(Communicator& tp, Communicator* ep) {
  ParamRegistry params(7, 0, 1, at::kDouble);
  MoeOptions o;
  o.experts = 4;
  o.top_k = 3;
  o.ffn_hidden = 1;
  MoeMlp moe(params, tp, ep, "moe.", /*hidden=*/1, o, 0.02);
  const double down[] = {1e20, 1.0, -1e20, 0.0};
  {
    torch::NoGradGuard no_grad;
    for (Parameter& p : params.params()) {
      const std::string& n = p.spec.name;
      if (n == "moe.router.weight") p.tensor.zero_();  // equal probabilities: experts 0, 1, 2
      for (int e = 0; e < 4; ++e) {
        const std::string expert = "moe.experts." + std::to_string(e) + ".";
        if (n == expert + "gate.weight" || n == expert + "up.weight") p.tensor.fill_(1.0);
        if (n == expert + "down.weight") p.tensor.fill_(down[e]);
      }
    }
  }
  const at::Tensor y = moe.forward(at::ones({1, 1, 1}, at::kDouble), 0.0);
  return y.item<double>();
}

TEST(MoeCombine, sums_in_expert_index_order_at_ep2) {
  ParallelContext ctx(MPI_COMM_WORLD, 2, 1, 1, 60.0, /*ep=*/2);
  ParallelContext solo(MPI_COMM_SELF, 1, 1, 1, 60.0);
  const double single = moe_output(solo.tp(), nullptr);
  const double spread = moe_output(ctx.tp(), &ctx.ep());  // experts 0, 1 on rank 0; 2, 3 on 1
  // The two orders the case tells apart.
  const double w = 1.0 / 3.0, s = 1.0 / (1.0 + std::exp(-1.0));
  const double a = w * (1e20 * s), b = w * (1.0 * s), c = w * (-1e20 * s);
  const double index_order = (a + b) + c, large_first = (a + c) + b;
  ASSERT_NE(index_order, large_first);  // the case can tell them apart
  EXPECT_EQ(single, index_order);
  EXPECT_EQ(spread, index_order) << "rank " << ctx.rank() << ": the combine at ep 2 gave "
                                 << spread;
}

}  // namespace
}  // namespace trident
