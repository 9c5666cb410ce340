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
  p.gpipe = true;
  EXPECT_DOUBLE_EQ(shared_pipeline_s(kTwoStages, p), 9.0);
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
