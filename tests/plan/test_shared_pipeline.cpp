// The processor-sharing simulation of a pipeline (plan/shared_pipeline.h) on schedules
// small enough to work out by hand.
#include <gtest/gtest.h>

#include "plan/shared_pipeline.h"

namespace trident::plan {
namespace {

const std::vector<StageWork> kTwoStages = {{1.0, 2.0}, {1.0, 2.0}};  // F 1 s, B 2 s

TEST(SharedPipeline, dedicated_cores_give_the_1f1b_time) {
  // p 2, m 2 on a core each: (m + p - 1)(F + B) = 9 s. Stage 0: F0 [0,1] F1 [1,2]
  // B0 [4,6] B1 [7,9]; stage 1: F0 [1,2] B0 [2,4] F1 [4,5] B1 [5,7].
  SharedPipeline p;
  p.micro_batches = 2;
  p.cores = 2;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(kTwoStages, p), 9.0);
  // Sends of 0.25 s: the critical path F0 -> stage 1's F0 B0 F1 B1 -> stage 0's B1
  // crosses twice (stage 1 never waits for F1, which arrives at 2.25 during its B0).
  p.send_s = 0.25;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(kTwoStages, p), 9.0 + 2 * 0.25);
}

TEST(SharedPipeline, one_shared_core_is_never_idle) {
  // Both stages on one core: something can always run, so the step is the total work,
  // 2 stages x 2 micro-batches x 3 s.
  SharedPipeline p;
  p.micro_batches = 2;
  p.cores = 1;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(kTwoStages, p), 12.0);
  // Two replicas of each stage (dp 2) on the same core: twice the work.
  p.copies = 2;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(kTwoStages, p), 24.0);
}

TEST(SharedPipeline, gpipe_runs_every_forward_first) {
  // p 2, m 2, dedicated: F0 F1 on stage 0 [0,2]; stage 1 F0 [1,2] F1 [2,3] B0 [3,5]
  // B1 [5,7]; stage 0 B0 [5,7] B1 [7,9].
  SharedPipeline p;
  p.micro_batches = 2;
  p.cores = 2;
  p.schedule = PipelineSchedule::kGpipe;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(kTwoStages, p), 9.0);
}

TEST(SharedPipeline, a_faster_stage_idles_only_as_long_as_its_own_passes) {
  // p 2, m 2, dedicated, the last stage twice the first's work: stage 1 F0 [1,3] B0 [3,7]
  // F1 [7,9] B1 [9,13], stage 0's B1 [13,15]: m (F + B) of the slow stage and one F + B of
  // the fast one, not the (m + p - 1)(F + B) = 18 s of equal stages as slow as the slowest.
  const std::vector<StageWork> unequal = {{1.0, 2.0}, {2.0, 4.0}};
  SharedPipeline p;
  p.micro_batches = 2;
  p.cores = 2;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(unequal, p), 15.0);
}

TEST(SharedPipeline, zb_h1_defers_the_weight_halves_into_the_cool_down) {
  // p 2, m 2, dedicated; F 1 s, input half 1 s, weight half 2 s; the first stage has no
  // input gradient (input half 0). Stage 1: F0 [1,2] B0 [2,3] F1 [3,4] B1 [4,5] W0 [5,7]
  // W1 [7,9]; stage 0: F0 F1 [0,2], B0 at 3, W0 [3,5], B1 at 5, W1 [5,7]. The last stage
  // is never idle after its first input: 9 s, where 1F1B with the same whole backward
  // (3 s) takes (m + p - 1)(F + B) = 12 s.
  const std::vector<StageWork> split = {{1.0, 2.0, 0.0, 0.0, 0.0}, {1.0, 2.0, 0.0, 0.0, 1.0}};
  SharedPipeline p;
  p.micro_batches = 2;
  p.cores = 2;
  p.schedule = PipelineSchedule::kZbH1;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(split, p), 9.0);
  const std::vector<StageWork> whole = {{1.0, 3.0}, {1.0, 3.0}};
  p.schedule = PipelineSchedule::kOneFOneB;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(whole, p), 12.0);
}

TEST(SharedPipeline, interleaved_chunks_shorten_the_fill_to_a_chunk_a_stage) {
  // p 2, v 2, m 2, chunks of F 1 s, B 2 s, dedicated. With m = p every forward comes
  // first: stage 1's chunks finish their forwards at 5, its last chunk's backwards run
  // [5,9], stage 0's [7,11], then the first chunks' [9,13] and [11,15]: 15 s, the
  // (v m + p - 1) chunk passes of Megatron's interleaved bubble (Narayanan et al. 2021).
  const std::vector<StageWork> chunks = {{1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}, {1.0, 2.0}};
  SharedPipeline p;
  p.micro_batches = 2;
  p.cores = 2;
  p.schedule = PipelineSchedule::kInterleaved1F1B;
  p.chunks = 2;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(chunks, p), 15.0);
  // Four micro-batches: (v m + p - 1) x 3 = 27 s.
  p.micro_batches = 4;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(chunks, p), 27.0);
}

TEST(SharedPipeline, a_core_a_rank_settles_as_the_event_simulation_does) {
  // With a core per rank the simulation settles operations without stepping through
  // events; a hair fewer cores than ranks takes the event path, which must agree.
  const std::vector<StageWork> four = {{1.0, 2.0, 0.1, 0.2, 0.0},
                                       {1.5, 2.5, 0.0, 0.3, 1.0},
                                       {0.8, 1.9, 0.2, 0.0, 0.9},
                                       {2.0, 3.0, 0.1, 0.1, 1.5}};
  for (PipelineSchedule schedule : {PipelineSchedule::kGpipe, PipelineSchedule::kOneFOneB,
                                    PipelineSchedule::kZbH1, PipelineSchedule::kInterleaved1F1B}) {
    SharedPipeline p;
    p.micro_batches = 6;
    p.copies = 2;
    p.send_s = 0.05;
    p.schedule = schedule;
    p.chunks = 2;  // interleaved: two chunks on each of two ranks' stages
    p.cores = 8;
    const double settled = shared_pipeline_s(four, p);
    p.cores = 8 * (1 - 1e-9);
    EXPECT_NEAR(settled, shared_pipeline_s(four, p), 1e-6) << static_cast<int>(schedule);
    EXPECT_GT(settled, 6 * 5.0);  // at least the last stage's work
  }
}

TEST(SharedPipeline, waits_take_no_core) {
  // One core, both stages: a 1 s wait after each pass (tp collectives) lets the other
  // stage compute meanwhile. Dedicated, the waits lengthen every pass: (m + p - 1) x 5.
  const std::vector<StageWork> waiting = {{1.0, 2.0, 1.0, 1.0}, {1.0, 2.0, 1.0, 1.0}};
  SharedPipeline p;
  p.micro_batches = 2;
  p.cores = 2;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(waiting, p), 15.0);
  // On one core the 12 s of computation dominate; the waits overlap with the other
  // stage's work, except where nothing else can run.
  p.cores = 1;
  const double shared = shared_pipeline_s(waiting, p);
  EXPECT_GE(shared, 12.0);
  EXPECT_LT(shared, 12.0 + 8 * 1.0);  // less than computing and waiting one after another
}

}  // namespace
}  // namespace trident::plan
