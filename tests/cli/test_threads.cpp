// Intra-op threads from the CPU sets of a node's ranks (cli/threads.h): ranks whose sets
// overlap share those cores; ranks bound to cores of their own use them all.
#include <gtest/gtest.h>

#include <algorithm>  // std::count
#include <string>
#include <thread>  // std::thread::hardware_concurrency
#include <vector>

#include "cli/threads.h"

namespace trident::cli {
namespace {

/// The CPU set [first, first + count) as cpu_set_text writes it, on a node of `total` CPUs.
std::string cpus(int first, int count, int total = 64) {
  std::string text(static_cast<size_t>(total), '0');
  for (int i = first; i < first + count; ++i) text[static_cast<size_t>(i)] = '1';
  return text;
}

TEST(Threads, unbound_ranks_in_a_restricted_set_share_that_set) {
  // Four ranks in 8 of a node's 64 cores (a container, Slurm without binding): 2 each.
  const std::vector<std::string> sets(4, cpus(8, 8));
  for (int me = 0; me < 4; ++me) {
    const ThreadChoice c = choose_threads(0, sets, me, 64);
    EXPECT_EQ(c.threads, 2) << "rank " << me;
    EXPECT_EQ(c.cores, 8);
    EXPECT_EQ(c.sharing, 4);
    EXPECT_EQ(c.local_ranks, 4);
    EXPECT_EQ(c.node_cores, 64);
  }
}

TEST(Threads, unbound_ranks_on_the_whole_node_share_it) {
  const std::vector<std::string> sets(4, cpus(0, 64));
  EXPECT_EQ(choose_threads(0, sets, 3, 64).threads, 16);
}

TEST(Threads, ranks_bound_apart_use_their_own_cores) {
  const std::vector<std::string> sets = {cpus(0, 16), cpus(16, 16), cpus(32, 16), cpus(48, 16)};
  for (int me = 0; me < 4; ++me) {
    const ThreadChoice c = choose_threads(0, sets, me, 64);
    EXPECT_EQ(c.threads, 16) << "rank " << me;
    EXPECT_EQ(c.sharing, 1);
  }
  // mpirun's binding of two ranks: a core each.
  EXPECT_EQ(choose_threads(0, {cpus(0, 1, 2), cpus(1, 1, 2)}, 1, 2).threads, 1);
}

TEST(Threads, ranks_bound_to_a_socket_share_their_socket) {
  const std::vector<std::string> sets = {cpus(0, 32), cpus(0, 32), cpus(32, 32), cpus(32, 32)};
  const ThreadChoice c = choose_threads(0, sets, 2, 64);
  EXPECT_EQ(c.threads, 16);
  EXPECT_EQ(c.sharing, 2);
}

TEST(Threads, more_ranks_than_cores_run_one_thread_each) {
  const std::vector<std::string> sets(8, cpus(0, 2, 2));
  EXPECT_EQ(choose_threads(0, sets, 5, 2).threads, 1);
}

TEST(Threads, a_configured_count_is_taken_as_it_is) {
  const std::vector<std::string> sets(4, cpus(8, 8));
  EXPECT_EQ(choose_threads(3, sets, 0, 64).threads, 3);
}

TEST(Threads, this_process_set_holds_cores_of_this_machine) {
  const std::string mine = cpu_set_text();
  const auto cores = std::count(mine.begin(), mine.end(), '1');
  EXPECT_GE(cores, 1);
  EXPECT_LE(cores, static_cast<long>(std::max(1u, std::thread::hardware_concurrency())));
  EXPECT_EQ(mine.find_first_not_of("01"), std::string::npos) << mine;
}

}  // namespace
}  // namespace trident::cli
