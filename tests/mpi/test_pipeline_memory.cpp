// Activation memory of a pipeline stage, measured by the counting allocator: 1F1B holds at
// most (stages - stage) micro-batches in flight where GPipe holds all of them, and with
// activation checkpointing a stage holds only its layers' inputs.
#include <ATen/ATen.h>
#include <gtest/gtest.h>
#include <mpi.h>

#include "common/memory_tracker.h"
#include "models/gpt.h"
#include "mpi_cases.h"  // register_mpi_cases
#include "parallel/parallel_context.h"
#include "pipeline/runtime.h"
#include "pipeline/schedule.h"

namespace trident {
namespace {

const bool kRegistered =
    testing::register_mpi_cases({{"pipeline_activation_memory_pp4_m8", 4, "PipelineMemory.*"}});

struct Measured {
  int max_in_flight = 0;
  int64_t peak_bytes = 0;
};

/// One step of `schedule_name` on this rank's stage of a pp = world GPT, without an
/// optimizer; the first step allocates the parameter gradients, the second is measured.
Measured measure(const std::string& schedule_name, bool checkpointing, int m) {
  install_memory_tracker();
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  ParallelContext ctx(MPI_COMM_WORLD, 1, world, 1, 60.0);
  GptOptions o{4, 64, 4, 128, 128, 32, 3, at::kFloat};
  GptStage stage(o, ctx.tp(), ctx.coord().pp, world);
  RuntimeOptions options{checkpointing, 2, at::kFloat};
  PipelineRuntime runtime(stage, ctx, options);
  const auto schedule = pipeline::make_schedule(schedule_name, world, ctx.coord().pp, m);
  auto batch = [&](int k) {
    auto gen = at::make_generator<at::CPUGeneratorImpl>(100 + k);
    at::Tensor ids = at::randint(128, {2, 33}, gen, at::kLong);
    return MicroBatch{ids.narrow(1, 0, 32).contiguous(), ids.narrow(1, 1, 32).contiguous()};
  };
  StepHooks hooks;
  runtime.run(schedule, batch, 1.0 / (2 * 32 * m), hooks);
  const StepResult r = runtime.run(schedule, batch, 1.0 / (2 * 32 * m), hooks);
  return {r.max_in_flight, r.peak_activation_bytes};
}

TEST(PipelineMemory, one_f_one_b_and_gpipe_in_flight_and_checkpointed_bytes) {
  int world = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  const int m = 8;
  const Measured gpipe = measure("gpipe", false, m);
  const Measured f1b = measure("1f1b", false, m);
  const Measured f1b_ckpt = measure("1f1b", true, m);
  const Measured gpipe_ckpt = measure("gpipe", true, m);

  EXPECT_EQ(gpipe.max_in_flight, m);
  EXPECT_EQ(f1b.max_in_flight, std::min(world - rank, m));
  EXPECT_EQ(f1b_ckpt.max_in_flight, std::min(world - rank, m));

  // The activations of one micro-batch crossing a stage boundary: (B, T, C) float32.
  const int64_t boundary = 2 * 32 * 64 * 4;
  // Without checkpointing, each in-flight micro-batch keeps every layer's saved tensors:
  // far more than its input.
  EXPECT_GT(gpipe.peak_bytes, m * 4 * boundary);
  // 1F1B holds fewer micro-batches than GPipe, so less memory.
  EXPECT_LT(f1b.peak_bytes, gpipe.peak_bytes);
  // With checkpointing each layer keeps, per in-flight micro-batch, its input and nothing
  // else: here one block per stage, whose input is the stage's input (the received
  // activations) or on the first stage the embedding's output, and on the last stage the
  // head's input too. Besides, the micro-batch's data (ids and targets) and right after a
  // forward the output not yet sent — on the last stage, which sends nothing, every
  // in-flight micro-batch's scalar loss. Buffers of sends in transit belong to the
  // communication and are not counted.
  const int64_t data_bytes = 2 * (2 * 32 * 8);  // ids and targets, (B, T) int64
  const int64_t kept_bytes = (rank == world - 1 ? 2 : 1) * boundary;
  auto checkpointed_bytes = [&](int in_flight) {
    const int64_t outputs = rank == world - 1 ? in_flight * int64_t{4} : boundary;
    return in_flight * (kept_bytes + data_bytes) + outputs;
  };
  EXPECT_EQ(f1b_ckpt.peak_bytes, checkpointed_bytes(f1b_ckpt.max_in_flight));
  EXPECT_EQ(gpipe_ckpt.peak_bytes, checkpointed_bytes(m));
  // ... which is a small fraction of what the same schedule holds without checkpointing.
  EXPECT_LT(f1b_ckpt.peak_bytes * 4, f1b.peak_bytes);
  EXPECT_LT(gpipe_ckpt.peak_bytes * 4, gpipe.peak_bytes);
  std::printf(
      "rank %d: peak activation bytes gpipe %lld, 1f1b %lld, 1f1b+ckpt %lld, "
      "gpipe+ckpt %lld (boundary tensor %lld)\n",
      rank, (long long)gpipe.peak_bytes, (long long)f1b.peak_bytes, (long long)f1b_ckpt.peak_bytes,
      (long long)gpipe_ckpt.peak_bytes, (long long)boundary);
}

}  // namespace
}  // namespace trident
