// Helpers of the multi-rank checkpoint tests.
#include "checkpoint_test_util.h"

#include <ATen/ATen.h>    // at::equal, tensor ops
#include <gtest/gtest.h>  // EXPECT_LE

#include <algorithm>  // std::max
#include <cstdio>     // std::printf
#include <map>        // std::map
#include <utility>    // std::pair
#include <vector>

#include "checkpoint/reader.h"          // read_global_tensor
#include "parity_harness.h"             // layout_config, train_steps
#include "tensor_parallel/parameter.h"  // cut_shard
#include "train/checkpointing.h"        // load_checkpoint of a Trainer
#include "zero/zero_optimizer.h"        // ZeroOptimizer, StateWindow, visit_states

namespace trident::testing {

namespace {

/// This rank's optimizer state, read window by window as a save reads it (visit_states:
/// the nvme tier's states stream through its ring), copied out: (parameter, first element)
/// of each window's range -> its master, moments and parameter values.
std::map<std::pair<size_t, int64_t>, std::vector<at::Tensor>> copy_states(ZeroOptimizer& opt) {
  std::map<std::pair<size_t, int64_t>, std::vector<at::Tensor>> states;
  opt.visit_states(
      [&](const StateWindow& window) {
        for (const auto& [i, v] : window)
          states[{i, v.start}] = {v.master.clone(), v.exp_avg.clone(),
                                  v.exp_avg_sq.defined() ? v.exp_avg_sq.clone() : at::Tensor(),
                                  v.param.clone()};
      },
      StateAccess::kRead);
  return states;
}

}  // namespace

bool same_state(Trainer& a, Trainer& b) {
  const auto& pa = a.model().params().params();
  const auto& pb = b.model().params().params();
  bool same = pa.size() == pb.size() && a.optimizer().num_params() == b.optimizer().num_params();
  for (size_t i = 0; same && i < pa.size(); ++i)
    same = at::equal(pa[i].tensor, pb[i].tensor);  // empty on both while ZeRO-3 released it
  const auto sa = copy_states(a.optimizer()), sb = copy_states(b.optimizer());
  same = same && sa.size() == sb.size();
  for (auto ia = sa.begin(), ib = sb.begin(); same && ia != sa.end(); ++ia, ++ib) {
    same = ia->first == ib->first;
    for (size_t t = 0; same && t < ia->second.size(); ++t) {
      const at::Tensor &x = ia->second[t], &y = ib->second[t];  // Muon's: no exp_avg_sq
      same = x.defined() == y.defined() && (!x.defined() || at::equal(x, y));
    }
  }
  return same && a.optimizer().step_count() == b.optimizer().step_count();
}

double max_difference_from(Trainer& t, const ParallelContext& ctx,
                           const checkpoint::CheckpointIndex& reference) {
  t.optimizer().gather_params();
  double worst = 0;
  for (const Parameter& p : t.model().params().params()) {
    const at::Tensor global = checkpoint::read_global_tensor(reference, p.spec.name);
    const at::Tensor want = cut_shard(p.spec, ctx.coord().tp, ctx.grid().tp(), global);
    const double scale = want.abs().max().item<double>();
    if (scale == 0) continue;
    worst = std::max(worst, (p.tensor.detach() - want).abs().max().item<double>() / scale);
  }
  t.optimizer().release_params();
  return worst;
}

MPI_Comm first_ranks(int n) {
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const bool member = rank < n;
  if (n == 1) return member ? MPI_COMM_SELF : MPI_COMM_NULL;
  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, member ? 0 : MPI_UNDEFINED, rank, &comm);
  return comm;
}

void free_first_ranks(MPI_Comm comm) {
  if (comm != MPI_COMM_NULL && comm != MPI_COMM_SELF) MPI_Comm_free(&comm);
}

void expect_resume_matches(const Layout& target, const std::string& path, int save_at, int steps,
                           const std::vector<double>& losses,
                           const checkpoint::CheckpointIndex& final_state, double loss_tolerance) {
  MPI_Comm comm = first_ranks(target.world());
  if (comm != MPI_COMM_NULL) {
    ParallelContext ctx(comm, target.dp, target.pp, target.tp, 120.0, target.ep, target.cp);
    Trainer trainer(layout_config(target, steps), ctx);
    load_checkpoint(trainer, ctx, path, "");
    const RunTrace got = train_steps(trainer, steps - save_at);
    double worst = 0;
    for (int s = 0; s < steps - save_at; ++s) {
      const double d = relative_difference(got.losses[s], losses[save_at + s]);
      worst = std::max(worst, d);
      EXPECT_LE(d, loss_tolerance) << target.name << " step " << save_at + s + 1 << ": "
                                   << got.losses[s] << " vs " << losses[save_at + s];
    }
    const double weights = max_difference_from(trainer, ctx, final_state);
    EXPECT_LE(weights, 1e-10) << target.name;
    if (ctx.rank() == 0)
      std::printf(
          "%s: steps %d..%d losses within %.3g, final weights within %.3g of the "
          "uninterrupted run\n",
          target.name.c_str(), save_at + 1, steps, worst, weights);
  }
  free_first_ranks(comm);
  MPI_Barrier(MPI_COMM_WORLD);
}

}  // namespace trident::testing
