// The trace of a context built on a sub-communicator, on 8 ranks: each half of the job
// forms a dp1 x pp2 x tp2 context and writes its own trace, which holds exactly that
// context's four ranks (events and labels), not the job's.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdlib>            // mkdtemp
#include <filesystem>         // std::filesystem::remove_all
#include <fstream>            // std::ifstream
#include <nlohmann/json.hpp>  // nlohmann::json
#include <set>                // std::set

#include "mpi_cases.h"                  // register_mpi_cases
#include "parallel/parallel_context.h"  // ParallelContext
#include "parallel/world.h"             // world_communicator, world_rank, world_size
#include "train/trace.h"                // TraceRecorder

namespace trident {
namespace {

const bool kRegistered = testing::register_mpi_cases({
    {"trace_of_contexts_on_halves_of_8_ranks", 8, "Trace.*"},
});

TEST(Trace, of_a_context_on_half_of_the_ranks_holds_exactly_its_ranks) {
  const int me = world_rank(), half = me / 4;
  std::string dir;
  if (me == 0) {
    char name[] = "/tmp/trident_trace_test_XXXXXX";
    dir = mkdtemp(name);
  }
  dir = world_communicator(60.0)->broadcast_bytes(dir, 0);
  const std::string path = dir + "/trace_" + std::to_string(half) + ".json";

  MPI_Comm comm = MPI_COMM_NULL;
  MPI_Comm_split(MPI_COMM_WORLD, half, me, &comm);
  {
    ParallelContext ctx(comm, 1, 2, 2, 60.0);
    ASSERT_EQ(ctx.rank(), me % 4);
    // One forward per rank, its micro-batch index naming the world rank that ran it.
    StepResult step;
    step.start_s = 100.0 + me;
    step.records.push_back({pipeline::Instruction{pipeline::Op::kForward, me}, 0.5, 0.75, false});
    TraceRecorder trace;
    trace.add(1, step);
    trace.write(path, ctx);
  }
  MPI_Comm_free(&comm);
  MPI_Barrier(MPI_COMM_WORLD);

  std::ifstream in(path);
  ASSERT_TRUE(in) << path << " was not written";
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::set<int> labelled, forwards, pids;
  for (const auto& e : trace.at("traceEvents")) {
    const int pid = e.at("pid").get<int>();
    if (e.at("ph") == "M" && e.at("name") == "process_name") {
      labelled.insert(pid);
      if (pid == 3) EXPECT_EQ(e.at("args").at("name"), "rank 3 (pp 1 dp 0 tp 1)");
    } else if (e.at("ph") == "X") {
      pids.insert(pid);
      const int ran_on = e.at("args").at("micro_batch").get<int>();
      forwards.insert(ran_on);
      EXPECT_EQ(pid, ran_on - 4 * half) << "the event of world rank " << ran_on;
      EXPECT_EQ(e.at("name"), "forward " + std::to_string(ran_on));
      // Times relative to the earliest event of the trace (world rank 4 * half's, 0.5 s in).
      EXPECT_DOUBLE_EQ(e.at("ts").get<double>(), (ran_on - 4 * half) * 1e6);
      EXPECT_DOUBLE_EQ(e.at("dur").get<double>(), 0.25e6);
    }
  }
  EXPECT_EQ(labelled, (std::set<int>{0, 1, 2, 3}));
  EXPECT_EQ(pids, (std::set<int>{0, 1, 2, 3}));
  const int b = 4 * half;
  EXPECT_EQ(forwards, (std::set<int>{b, b + 1, b + 2, b + 3}));
  MPI_Barrier(MPI_COMM_WORLD);
  if (me == 0) std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace trident
