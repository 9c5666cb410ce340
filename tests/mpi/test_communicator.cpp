// Multi-rank tests of the process groups and the MPI communicator on a 2x2x2 grid:
// membership, every operation and dtype against closed forms, overlap, counters.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include <chrono>  // std::chrono::seconds
#include <thread>  // std::this_thread::sleep_for

#include "mpi_cases.h"  // register_mpi_cases
#include "parallel/agreement.h"
#include "parallel/mpi_communicator.h"  // MpiCommunicator::set_counter_clock
#include "parallel/parallel_context.h"
#include "parallel/world.h"

namespace trident {
namespace {

const bool kRegistered = testing::register_mpi_cases({
    {"mpi_communicator_dp2_pp2_tp2", 8,
     "Groups.*:Comm/*:RingReduceScatter.*:Overlap.*:Counters.*:Agreement.*:Bytes.*"},
    // The job aborts (that is what it tests): ctest passes on the timeout message instead
    // of the exit code.
    {"mpi_timeout_message_dp2_pp2_tp2", 8, "TimeoutProbe.*", 120,
     R"(rank [0-9]: all_reduce of 64 bytes on group 'tp' \(ranks 2,3\) did not complete within 2.0 s)"},
});

std::unique_ptr<ParallelContext> grid_2x2x2() {
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

// Expert parallelism carved out of dp: dp4 x tp2 with ep 2 (rank = tp + 2 dp).
TEST(Groups, ep_groups_are_consecutive_dp_ranks_and_expert_dp_the_rest) {
  ParallelContext ctx(MPI_COMM_WORLD, 4, 1, 2, 60.0, /*ep=*/2);
  const int me = ctx.rank(), tp = me % 2, dp = me / 2;
  const int first = dp - dp % 2;  // the ep group's first dp rank
  EXPECT_EQ(ctx.ep().world_ranks(), (std::vector<int>{tp + 2 * first, tp + 2 * (first + 1)}));
  EXPECT_EQ(ctx.expert_dp().world_ranks(),
            (std::vector<int>{tp + 2 * (dp % 2), tp + 2 * (dp % 2 + 2)}));
  EXPECT_EQ(ctx.ep().rank(), ctx.grid().ep_rank(ctx.coord()));
  EXPECT_EQ(ctx.expert_dp().rank(), ctx.grid().expert_dp_rank(ctx.coord()));
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

TEST_P(EveryDtype, all_to_all_of_unequal_counts_on_world) {
  auto ctx = grid_2x2x2();
  const at::ScalarType dtype = GetParam();
  Communicator& world = ctx->world();
  const int n = world.size(), r = world.rank();
  // Rank r sends (r + d) % 3 rows to rank d (none to some), row k holding
  // {r * 16 + d, k} (exact in every dtype).
  std::vector<int64_t> send_rows, recv_rows;
  std::vector<at::Tensor> rows;
  for (int d = 0; d < n; ++d) {
    send_rows.push_back((r + d) % 3);
    recv_rows.push_back((d + r) % 3);
    for (int k = 0; k < (r + d) % 3; ++k)
      rows.push_back(at::tensor({static_cast<double>(r * 16 + d), static_cast<double>(k)}));
  }
  const at::Tensor input = at::stack(rows).to(dtype);
  int64_t total = 0;
  for (int64_t c : recv_rows) total += c;
  at::Tensor output = at::empty({total, 2}, dtype);
  world.all_to_all(output, input, send_rows, recv_rows)->wait();
  int64_t at_row = 0;
  for (int s = 0; s < n; ++s)
    for (int k = 0; k < recv_rows[static_cast<size_t>(s)]; ++k, ++at_row) {
      EXPECT_EQ(output[at_row][0].item<double>(), s * 16 + r) << "from rank " << s;
      EXPECT_EQ(output[at_row][1].item<double>(), k) << "from rank " << s;
    }
  EXPECT_EQ(world.counter(CommKind::kAllToAll).calls, 1);
  world.reset_counters();
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

/// The seconds a counter charges for the readings of its clock from `before` to `after`
/// (exclusive, inclusive) on a clock that moves one second a reading: from the first of them
/// to the last, none when the call read it not at all.
double span_of(double before, double after) { return after > before ? after - before - 1 : 0; }

TEST(Counters, wait_seconds_count_the_time_spent_inside_the_group) {
  auto ctx = grid_2x2x2();
  auto& tp = dynamic_cast<MpiCommunicator&>(ctx->tp());
  // The counters' clock moves one second at each reading, and 100 s while the caller
  // computes between the group's calls: what each counter holds is then exact, however
  // loaded the machine (the group's timeout still reads the steady clock).
  double now_s = 0;
  tp.set_counter_clock([&now_s] {
    now_s += 1;
    return MpiCommunicator::Clock::time_point(
        std::chrono::duration_cast<MpiCommunicator::Clock::duration>(
            std::chrono::duration<double>(now_s)));
  });
  tp.reset_counters();
  at::Tensor x = at::ones({1000}, at::kDouble), y = at::ones({10}, at::kDouble);
  // One all-reduce waited for, one tested first; the counters charge each call's span.
  double expected_wait = 0, at_post = now_s;
  WorkHandle first = tp.all_reduce(x, ReduceOp::kSum);
  EXPECT_GE(now_s - at_post, 2) << "posting reads the clock on entry and on return";
  expected_wait += span_of(at_post, now_s);
  now_s += 100;  // computing while the all-reduce is in flight
  double at_call = now_s;
  first->wait();
  EXPECT_GE(now_s - at_call, 2) << "waiting reads the clock on entry and on return";
  expected_wait += span_of(at_call, now_s);

  at_call = now_s;
  WorkHandle second = tp.all_reduce(y, ReduceOp::kSum);
  expected_wait += span_of(at_call, now_s);
  now_s += 100;
  at_call = now_s;
  second->test();  // may complete it, or not: the other rank may not have posted yet
  EXPECT_GE(now_s - at_call, 2) << "a test reads the clock on entry and on return";
  expected_wait += span_of(at_call, now_s);
  now_s += 100;
  at_call = now_s;
  second->wait();  // reads nothing when the test completed it
  expected_wait += span_of(at_call, now_s);
  const double end_s = now_s;
  tp.set_counter_clock(nullptr);

  const CommCounter& c = tp.counter(CommKind::kAllReduce);
  EXPECT_EQ(c.calls, 2);
  // Posting, testing and waiting, not the 300 s of computing between them.
  EXPECT_DOUBLE_EQ(c.wait_seconds, expected_wait);
  EXPECT_LT(c.wait_seconds, 100);
  // From posting to completion, the computing included: 100 s or more each.
  EXPECT_GE(c.seconds, 200);
  EXPECT_LE(c.seconds, end_s - at_post);
  EXPECT_DOUBLE_EQ(tp.total_wait_seconds(), c.wait_seconds);
  EXPECT_EQ(ctx->dp().total_wait_seconds(), 0.0);
  EXPECT_EQ(y[0].item<double>(), 2.0);
  EXPECT_EQ(x[0].item<double>(), 2.0);
}

// Byte strings: lengths that differ per rank (rank 2's is empty), roots other than 0, on
// the world and on sub-groups of the grid.

/// World rank r's string: r * 37 + 1 bytes (none for rank 2), NULs included, so that both
/// lengths and contents are checked.
std::string bytes_of(int r) {
  std::string s(static_cast<size_t>(r == 2 ? 0 : r * 37 + 1), '\0');
  for (size_t i = 0; i < s.size(); ++i)
    s[i] = static_cast<char>((i * 7 + static_cast<size_t>(r)) % 256);
  return s;
}

TEST(Bytes, broadcast_from_a_root_other_than_0_on_world_and_tp) {
  auto ctx = grid_2x2x2();
  Communicator& world = ctx->world();
  world.reset_counters();
  const std::string mine = bytes_of(ctx->rank());
  EXPECT_EQ(world.broadcast_bytes(mine, 5), bytes_of(5));
  EXPECT_EQ(world.counter(CommKind::kBroadcast).calls, 1);
  EXPECT_EQ(world.counter(CommKind::kBroadcast).bytes, 5 * 37 + 1);
  EXPECT_EQ(world.broadcast_bytes(mine, 2), "");  // rank 2's empty string replaces every one
  // 3 MiB from rank 7, every byte checked.
  std::string big(3 << 20, 'x');
  if (ctx->rank() == 7)
    for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i % 251);
  const std::string got = world.broadcast_bytes(ctx->rank() == 7 ? big : std::string(), 7);
  ASSERT_EQ(got.size(), big.size());
  for (size_t i = 0; i < got.size(); i += 4099) EXPECT_EQ(got[i], static_cast<char>(i % 251));
  // On each tp pair from its group rank 1: the pair's second member's string.
  Communicator& tp = ctx->tp();
  EXPECT_EQ(tp.broadcast_bytes(mine, 1), bytes_of(tp.world_ranks()[1]));
}

TEST(Bytes, gather_of_unequal_lengths_to_a_root_other_than_0_on_world_and_dp) {
  auto ctx = grid_2x2x2();
  Communicator& world = ctx->world();
  world.reset_counters();
  const int me = ctx->rank();
  const std::vector<std::string> all = world.gather_bytes(bytes_of(me), 3);
  int64_t total = 0;
  for (int r = 0; r < 8; ++r) total += static_cast<int64_t>(bytes_of(r).size());
  if (me == 3) {
    ASSERT_EQ(all.size(), 8u);
    for (int r = 0; r < 8; ++r) EXPECT_EQ(all[r], bytes_of(r)) << "from rank " << r;
    EXPECT_EQ(world.counter(CommKind::kGather).bytes, total);
  } else {
    EXPECT_TRUE(all.empty());
    EXPECT_EQ(world.counter(CommKind::kGather).bytes, static_cast<int64_t>(bytes_of(me).size()));
  }
  EXPECT_EQ(world.counter(CommKind::kGather).calls, 1);
  // Every string empty.
  const std::vector<std::string> none = world.gather_bytes("", 6);
  EXPECT_EQ(none, me == 6 ? std::vector<std::string>(8) : std::vector<std::string>{});
  // On each dp pair, to its group rank 1.
  Communicator& dp = ctx->dp();
  const std::vector<std::string> pair = dp.gather_bytes(bytes_of(me), 1);
  if (dp.rank() == 1) {
    EXPECT_EQ(pair, (std::vector<std::string>{bytes_of(dp.world_ranks()[0]),
                                              bytes_of(dp.world_ranks()[1])}));
  } else {
    EXPECT_TRUE(pair.empty());
  }
}

TEST(Bytes, all_gather_of_unequal_lengths_on_world_and_model_parallel) {
  auto ctx = grid_2x2x2();
  const int me = ctx->rank();
  const std::vector<std::string> all = ctx->world().all_gather_bytes(bytes_of(me));
  ASSERT_EQ(all.size(), 8u);
  for (int r = 0; r < 8; ++r) EXPECT_EQ(all[r], bytes_of(r)) << "from rank " << r;
  Communicator& mp = ctx->model_parallel();
  const std::vector<std::string> group = mp.all_gather_bytes(bytes_of(me));
  ASSERT_EQ(group.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(group[i], bytes_of(mp.world_ranks()[i]));
}

TEST(Groups, split_orders_by_key_and_leaves_out_ranks_without_a_group) {
  auto ctx = grid_2x2x2();
  const int me = ctx->rank();
  // Ranks 0, 3, 6 in the group, ordered by descending rank; the others in none.
  auto thirds = ctx->world().split(me % 3 == 0 ? 0 : Communicator::kNoGroup, -me, "thirds", 60.0);
  if (me % 3 != 0) {
    EXPECT_TRUE(thirds == nullptr);
    return;
  }
  ASSERT_TRUE(thirds != nullptr);
  EXPECT_EQ(thirds->name(), "thirds");
  EXPECT_EQ(thirds->world_ranks(), (std::vector<int>{6, 3, 0}));
  EXPECT_EQ(thirds->rank(), 2 - me / 3);
  at::Tensor t = at::full({1}, me, at::kLong);
  thirds->all_reduce(t)->wait();
  EXPECT_EQ(t.item<int64_t>(), 9);
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
