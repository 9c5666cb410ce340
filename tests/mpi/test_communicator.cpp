// Multi-rank tests of the process groups and the MPI communicator on a 2x2x2 grid:
// membership, every operation and dtype against closed forms, overlap, counters.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>  // std::chrono::seconds
#include <thread>  // std::this_thread::sleep_for

#include "parallel/agreement.h"
#include "parallel/parallel_context.h"
#include "parallel/world.h"

namespace trident {
namespace {

std::unique_ptr<ParallelContext> grid_2x2x2() {
  int size = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  EXPECT_EQ(size, 8) << "run under mpirun -np 8";
  return std::make_unique<ParallelContext>(MPI_COMM_WORLD, 2, 2, 2, 60.0);
}

TEST(Groups, dp2_pp2_tp2_membership_matches_the_grid) {
  auto ctx = grid_2x2x2();
  const int me = ctx->rank();
  for (Communicator* group : ctx->all_groups()) {
    at::Tensor mine = at::full({1}, me, at::kLong);
    at::Tensor all = at::empty({group->size()}, at::kLong);
    group->all_gather(all, mine)->wait();
    const auto& expected = group->world_ranks();
    ASSERT_EQ(all.numel(), static_cast<int64_t>(expected.size())) << group->name();
    for (int i = 0; i < group->size(); ++i)
      EXPECT_EQ(all[i].item<int64_t>(), expected[i]) << group->name();
  }
  // Megatron order: tp fastest, then dp, then pp.
  EXPECT_EQ(ctx->tp().world_ranks(), (std::vector<int>{me & ~1, (me & ~1) + 1}));
  EXPECT_EQ(ctx->coord().pp, me / 4);
  EXPECT_EQ(ctx->coord().dp, (me / 2) % 2);
  EXPECT_EQ(ctx->model_parallel().size(), 4);
  ASSERT_NE(ctx->embedding(), nullptr);  // pp = 2: every rank is on the first or last stage
  EXPECT_EQ(ctx->embedding()->size(), 2);
}

class EveryDtype : public ::testing::TestWithParam<at::ScalarType> {};

TEST_P(EveryDtype, all_reduce_sum_average_max_on_world) {
  auto ctx = grid_2x2x2();
  const at::ScalarType dtype = GetParam();
  const int n = ctx->world().size();
  const int r = ctx->rank();
  at::Tensor t = at::arange(6, at::kDouble).add(r + 1).to(dtype);  // element i: i + r + 1
  ctx->world().all_reduce(t, ReduceOp::kSum)->wait();
  // sum over r of (i + r + 1) = n*i + n(n+1)/2
  at::Tensor expected = at::arange(6, at::kDouble).mul(n).add(n * (n + 1) / 2);
  EXPECT_TRUE(at::equal(t.to(at::kDouble), expected)) << t;

  at::Tensor m = at::full({3}, r * 2, at::kDouble).to(dtype);
  ctx->world().all_reduce(m, ReduceOp::kMax)->wait();
  EXPECT_EQ(m[2].item<double>(), 2.0 * (n - 1));

  if (at::isFloatingType(dtype)) {
    at::Tensor a = at::full({4}, r, at::kDouble).to(dtype);
    ctx->world().all_reduce(a, ReduceOp::kAverage)->wait();
    EXPECT_DOUBLE_EQ(a[0].item<double>(), (n - 1) / 2.0);
  }
}

TEST_P(EveryDtype, reduce_scatter_and_all_gather_on_dp) {
  auto ctx = grid_2x2x2();
  const at::ScalarType dtype = GetParam();
  Communicator& dp = ctx->dp();
  const int n = dp.size();
  const int g = dp.rank();
  // input chunk c, element i: 10*c + i + g ; reduced chunk g: n*(10*g + i) + sum(g')
  at::Tensor input = at::arange(n * 3, at::kDouble).view({n, 3});
  input = (input.select(1, 0).unsqueeze(1) * 0 + at::arange(n, at::kDouble).unsqueeze(1) * 10 +
           at::arange(3, at::kDouble).unsqueeze(0) + g)
              .contiguous()
              .view({-1})
              .to(dtype);
  at::Tensor output = at::empty({3}, dtype);
  dp.reduce_scatter(output, input, ReduceOp::kSum)->wait();
  for (int i = 0; i < 3; ++i)
    EXPECT_EQ(output[i].item<double>(), n * (10.0 * g + i) + n * (n - 1) / 2.0);

  at::Tensor mine = at::full({2}, 100 + g, at::kDouble).to(dtype);
  at::Tensor gathered = at::empty({2 * n}, dtype);
  dp.all_gather(gathered, mine)->wait();
  for (int c = 0; c < n; ++c) EXPECT_EQ(gathered[2 * c + 1].item<double>(), 100.0 + c);
}

TEST_P(EveryDtype, broadcast_and_send_recv_on_pp_and_tp) {
  auto ctx = grid_2x2x2();
  const at::ScalarType dtype = GetParam();
  at::Tensor b = at::full({5}, ctx->rank(), at::kDouble).to(dtype);
  ctx->pp().broadcast(b, 1)->wait();  // root is the last stage of this pipeline
  EXPECT_EQ(b[4].item<double>(), static_cast<double>(ctx->pp().world_ranks()[1]));

  Communicator& tp = ctx->tp();
  const int peer = 1 - tp.rank();
  at::Tensor out = at::full({4}, 7 * ctx->rank(), at::kDouble).to(dtype);
  at::Tensor in = at::zeros({4}, dtype);
  auto recv = tp.recv(in, peer, /*tag=*/11);
  auto send = tp.send(out, peer, /*tag=*/11);
  send->wait();
  recv->wait();
  EXPECT_EQ(in[3].item<double>(), 7.0 * tp.world_ranks()[peer]);
}

INSTANTIATE_TEST_SUITE_P(Comm, EveryDtype,
                         ::testing::Values(at::kDouble, at::kFloat, at::kBFloat16, at::kLong),
                         [](const auto& info) { return std::string(c10::toString(info.param)); });

// The ring reduce-scatter over all 8 ranks (7 rounds), two in flight at once, against
// closed forms: rank r contributes r + i at element i of chunk c (a sum), and r * (c + 1)
// (a maximum).
TEST(RingReduceScatter, sum_and_max_over_eight_ranks_two_in_flight) {
  auto ctx = grid_2x2x2();
  Communicator& world = ctx->world();
  const int n = world.size(), r = world.rank();
  const int64_t S = 5;
  at::Tensor sum_in = at::arange(n * S, at::kDouble).remainder(S).add_(r);
  at::Tensor max_in = at::arange(n, at::kDouble).add_(1).mul_(r).repeat_interleave(S);
  at::Tensor sum_out = at::empty({S}, at::kDouble), max_out = at::empty({S}, at::kDouble);
  auto a = world.reduce_scatter(sum_out, sum_in, ReduceOp::kSum);
  auto b = world.reduce_scatter(max_out, max_in, ReduceOp::kMax);
  b->wait();
  a->wait();
  const double ranks_sum = n * (n - 1) / 2.0;
  for (int64_t i = 0; i < S; ++i) {
    EXPECT_EQ(sum_out[i].item<double>(), n * static_cast<double>(i) + ranks_sum);
    EXPECT_EQ(max_out[i].item<double>(), (n - 1) * static_cast<double>(r + 1));
  }
}

TEST(Overlap, all_reduce_progresses_while_a_matmul_runs) {
  auto ctx = grid_2x2x2();
  at::Tensor big = at::full({1 << 20}, 1.0, at::kFloat);
  auto work = ctx->dp().all_reduce(big, ReduceOp::kSum);
  // Computation between post and wait; the handle is polled as a training loop would.
  at::Tensor a = at::rand({256, 256}, at::kFloat);
  at::Tensor acc = at::zeros({256, 256});
  int polls = 0;
  for (int i = 0; i < 8; ++i) {
    acc += at::mm(a, a);
    polls += work->test() ? 0 : 1;
  }
  work->wait();
  EXPECT_TRUE(work->test());
  EXPECT_EQ(big[12345].item<float>(), 2.0f);
  EXPECT_GT(acc.abs().sum().item<float>(), 0.0f);
}

TEST(Counters, bytes_and_calls_per_kind_and_group) {
  auto ctx = grid_2x2x2();
  for (Communicator* g : ctx->all_groups()) g->reset_counters();
  at::Tensor f64 = at::ones({100}, at::kDouble);    // 800 bytes
  at::Tensor bf16 = at::ones({64}, at::kBFloat16);  // 128 bytes
  ctx->tp().all_reduce(f64)->wait();
  ctx->tp().all_reduce(bf16)->wait();
  at::Tensor out = at::empty({50}, at::kDouble);
  ctx->dp().reduce_scatter(out, f64)->wait();
  at::Tensor gathered = at::empty({200}, at::kDouble);
  ctx->dp().all_gather(gathered, f64)->wait();

  const CommCounter& ar = ctx->tp().counter(CommKind::kAllReduce);
  EXPECT_EQ(ar.calls, 2);
  EXPECT_EQ(ar.bytes, 800 + 128);
  EXPECT_GE(ar.seconds, 0.0);
  EXPECT_EQ(ctx->dp().counter(CommKind::kReduceScatter).bytes, 800);
  EXPECT_EQ(ctx->dp().counter(CommKind::kAllGather).bytes, 1600);
  EXPECT_EQ(ctx->dp().total_bytes(), 2400);
  EXPECT_EQ(ctx->pp().total_bytes(), 0);
}

TEST(Counters, wait_seconds_count_the_time_spent_inside_the_group) {
  auto ctx = grid_2x2x2();
  Communicator& tp = ctx->tp();
  tp.reset_counters();
  at::Tensor x = at::ones({1000}, at::kDouble);
  // Group rank 1 arrives 0.3 s late: rank 0 is blocked for about that long, rank 1 not.
  if (tp.rank() == 1) std::this_thread::sleep_for(std::chrono::milliseconds(300));
  const auto from = std::chrono::steady_clock::now();
  tp.all_reduce(x)->wait();
  const double span =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - from).count();
  const CommCounter& c = tp.counter(CommKind::kAllReduce);
  if (tp.rank() == 0) {
    EXPECT_GE(c.wait_seconds, 0.25);
  } else {
    EXPECT_LT(c.wait_seconds, 0.25);
  }
  EXPECT_LE(c.wait_seconds, span);  // the time from posting to completion, at most
  EXPECT_DOUBLE_EQ(tp.total_wait_seconds(), c.wait_seconds);
  EXPECT_EQ(ctx->dp().total_wait_seconds(), 0.0);
  EXPECT_EQ(x[0].item<double>(), 2.0);
}

// Not part of the normal run: ctest runs it alone and expects the job to end with the
// timeout message (rank 3 withholds its part of a tp all-reduce).
TEST(TimeoutProbe, one_rank_withholds_its_part) {
  ParallelContext ctx(MPI_COMM_WORLD, 2, 2, 2, 2.0);
  at::Tensor t = at::ones({16}, at::kFloat);
  if (ctx.rank() != 3) ctx.tp().all_reduce(t)->wait();
  if (ctx.rank() == 3) {
    // Withhold, then wait long enough for the others to time out first.
    std::this_thread::sleep_for(std::chrono::seconds(30));
  }
}

}  // namespace
}  // namespace trident

namespace trident {
namespace {

TEST(Agreement, one_rank_failure_ends_every_rank_with_its_message) {
  const std::unique_ptr<Communicator> world = world_communicator(60.0);
  const int rank = world->rank();
  try {
    run_agreed(*world, [&] {
      if (rank == 3) throw std::runtime_error("data file x.bin is missing");
    });
    FAIL() << "rank " << rank << " went on after rank 3 failed";
  } catch (const JobError& e) {
    EXPECT_STREQ(e.what(), "rank 3: data file x.bin is missing");
  }
  // A failure on every rank is reported once, without a rank prefix.
  try {
    run_agreed(*world, [] { throw std::runtime_error("bad config"); });
    FAIL();
  } catch (const JobError& e) {
    EXPECT_STREQ(e.what(), "bad config");
  }
  EXPECT_NO_THROW(run_agreed(*world, [] {}));
}

}  // namespace
}  // namespace trident
