// LocalCommunicator (the group of one of a build without MPI) and HostStagedCommunicator
// over it: what each operation leaves in its tensors, messages to itself by tag, the
// counters, and bad peers.
#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "parallel/host_staged_communicator.h"
#include "parallel/local_communicator.h"
#include "parallel/parallel_context.h"

namespace trident {
namespace {

at::Tensor arange(int64_t n) { return at::arange(n, at::kDouble); }

TEST(LocalCommunicator, collectives_of_one_rank_keep_or_copy_their_tensors) {
  LocalCommunicator comm("dp", 3);
  EXPECT_EQ(comm.size(), 1);
  EXPECT_EQ(comm.world_ranks(), std::vector<int>{3});
  at::Tensor t = arange(4);
  comm.all_reduce(t, ReduceOp::kAverage)->wait();
  EXPECT_TRUE(t.equal(arange(4)));
  at::Tensor out = at::zeros({4}, at::kDouble);
  comm.reduce_scatter(out, arange(4), ReduceOp::kSum)->wait();
  EXPECT_TRUE(out.equal(arange(4)));
  at::Tensor gathered = at::zeros({2, 2}, at::kDouble);
  comm.all_gather(gathered, arange(4))->wait();
  EXPECT_TRUE(gathered.reshape({-1}).equal(arange(4)));
  EXPECT_EQ(comm.all_gather_bytes("abc"), std::vector<std::string>{"abc"});
  EXPECT_EQ(comm.broadcast_bytes("xy", 0), "xy");
  EXPECT_EQ(comm.counter(CommKind::kAllReduce).calls, 1);
  EXPECT_EQ(comm.counter(CommKind::kReduceScatter).bytes, 32);
  EXPECT_EQ(comm.total_bytes(), 32 + 32 + 32 + 3 + 2);
}

TEST(LocalCommunicator, a_message_to_itself_is_received_by_its_tag) {
  LocalCommunicator comm("pp", 0);
  at::Tensor a = arange(3), b = arange(3) * 10;
  comm.send(a, 0, 7)->wait();
  comm.send(b, 0, 8)->wait();
  a.zero_();  // the message is the tensor as it was sent
  at::Tensor got = at::empty({3}, at::kDouble);
  comm.recv(got, 0, 8)->wait();
  EXPECT_TRUE(got.equal(arange(3) * 10));
  comm.recv(got, 0, 7)->wait();
  EXPECT_TRUE(got.equal(arange(3)));
  EXPECT_THROW(comm.recv(got, 0, 7), c10::Error);  // received already
  EXPECT_THROW(comm.send(got, 1, 0), c10::Error);  // no rank 1
}

TEST(LocalCommunicator, split_makes_a_group_of_one_or_none) {
  LocalCommunicator comm("world", 0);
  EXPECT_EQ(comm.split(Communicator::kNoGroup, 0, "tp", 1.0), nullptr);
  const auto tp = comm.split(0, 0, "tp", 1.0);
  ASSERT_NE(tp, nullptr);
  EXPECT_EQ(tp->name(), "tp");
}

TEST(HostStagedCommunicator, passes_host_tensors_through_and_counts_the_host_groups_calls) {
  HostStagedCommunicator comm(std::make_unique<LocalCommunicator>("dp", 0));
  at::Tensor out = at::zeros({4}, at::kDouble);
  comm.reduce_scatter(out, arange(4), ReduceOp::kSum)->wait();
  EXPECT_TRUE(out.equal(arange(4)));
  comm.all_reduce(out, ReduceOp::kSum)->wait();
  EXPECT_EQ(comm.counter(CommKind::kReduceScatter).calls, 1);
  EXPECT_EQ(comm.counter(CommKind::kAllReduce).bytes, 32);
  comm.reset_counters();
  EXPECT_EQ(comm.total_bytes(), 0);
  const auto sub = comm.split(0, 0, "tp", 1.0);
  ASSERT_NE(dynamic_cast<HostStagedCommunicator*>(sub.get()), nullptr);
}

TEST(ParallelContext, a_cpu_run_over_one_process_has_host_groups) {
  LocalCommunicator base("world", 0);
  ParallelContext ctx(base, 1, 1, 1, 1.0);
  EXPECT_TRUE(ctx.device().is_cpu());
  EXPECT_EQ(ctx.transport(), DeviceTransport::kHost);
  EXPECT_EQ(ctx.dp().size(), 1);
  EXPECT_NE(dynamic_cast<LocalCommunicator*>(&ctx.tp()), nullptr);
  EXPECT_NE(ctx.embedding(), nullptr);
}

}  // namespace
}  // namespace trident
