// The MoE combine at ep 2 sums a token's expert outputs in increasing expert index, as the
// single process does, whichever rank computed them: a case built so that any other order
// gives another number. Three experts chosen with equal weights output +a, b and -a
// (a = 1e20 times silu(1) / 3, b about 0.24): in index order (a + b) - a rounds to 0, while
// summing the two large ones first, as a rank that took its own expert first would, gives b.
// And the all-to-alls' time where a user looks for it: the instruction records, the trace's
// second row, the time split and the step's metrics.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mpi.h>
#include <torch/csrc/autograd/grad_mode.h>  // torch::NoGradGuard

#include <nlohmann/json.hpp>  // nlohmann::json

#include "models/moe.h"  // MoeMlp
#include "mpi_cases.h"   // register_mpi_cases
#include "parallel/parallel_context.h"
#include "parity_harness.h"  // moe, ep, layout_config
#include "train/trace.h"     // TraceRecorder
#include "train/trainer.h"

namespace trident {
namespace {

const bool kRegistered = testing::register_mpi_cases({
    {"moe_combine_order_and_all_to_all_time_ep2", 2, "MoeCombine.*:MoeTrace.*"},
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

TEST(MoeTrace, all_to_all_time_in_the_records_trace_split_and_metrics) {
  const testing::Layout l =
      testing::moe(testing::ep({"dp2_ep2", 2, 1, 1, 1, "1f1b", false, 2}, 2), {});
  ParallelContext ctx(MPI_COMM_WORLD, 2, 1, 1, 60.0, 2);
  Trainer trainer(testing::layout_config(l, 2), ctx);
  const StepMetrics m = trainer.step();
  EXPECT_GT(m.ep_wait_s, 0.0);
  double in_records = 0, in_forwards = 0, reduce = 0;
  for (const InstructionRecord& r : trainer.last_step().records) {
    EXPECT_LE(r.all_to_all_s, r.end - r.start + 1e-9);
    in_records += r.all_to_all_s;
    if (r.instruction.op == pipeline::Op::kForward) in_forwards += r.all_to_all_s;
    if (r.instruction.op == pipeline::Op::kReduceGrads) reduce += r.end - r.start;
  }
  EXPECT_GT(in_forwards, 0.0);                // dispatch and combine run in the forward
  EXPECT_LE(in_records, m.ep_wait_s + 1e-9);  // all of it inside the step
  TraceRecorder trace;
  trace.add(1, trainer.last_step());
  // The split counts the all-to-alls as communication, with the gradient reduction.
  EXPECT_NEAR(trace.split().communication, in_records + reduce, 1e-12);
  int rows = 0;
  for (const auto& e : nlohmann::json::parse(trace.events_json(ctx.rank())))
    if (e.at("name") == "all-to-all (ep), total") {
      ++rows;
      EXPECT_EQ(e.at("tid"), 1);
    }
  EXPECT_GT(rows, 0);
}

}  // namespace
}  // namespace trident
