// Interleaved 1F1B and ZB-H1: golden compute orders, the checker's proofs and bubbles
// against (p-1)/(v*m+p-1) and ZB-H1's formula over a grid of sizes, and hand-broken
// variants (chunks and split backwards) rejected with the stage and instruction named.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <stdexcept>  // std::invalid_argument
#include <string>     // std::string
#include <utility>    // std::swap
#include <vector>     // std::vector

#include "pipeline/schedule.h"          // make_schedule, to_string, parse_schedule
#include "pipeline/schedule_checker.h"  // check_schedules, *_bubble_formula

namespace trident::pipeline {
namespace {

size_t index_of(const Schedule& schedule, const std::string& mnemonic) {
  for (size_t k = 0; k < schedule.size(); ++k)
    if (to_string(schedule[k]) == mnemonic) return k;
  ADD_FAILURE() << mnemonic << " not found in " << to_string(schedule, false);
  return 0;
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(InterleavedGolden, pp2_m4_v2) {
  EXPECT_EQ(to_string(make_schedule("interleaved-1f1b", 2, 0, 4, 2)),
            "F0 F1 F0c1 F1c1 F2 B0c1 F3 B1c1 F2c1 B0 F3c1 B1 B2c1 B3c1 B2 B3");
  EXPECT_EQ(to_string(make_schedule("interleaved-1f1b", 2, 1, 4, 2)),
            "F0 F1 F0c1 B0c1 F1c1 B1c1 F2 B0 F3 B1 F2c1 B2c1 F3c1 B3c1 B2 B3");
}

TEST(InterleavedGolden, lowered_pp2_m2_v2_sends_round_the_ring) {
  // Stage 1's chunk 0 sends to stage 0's chunk 1; the gradient comes back the same way.
  EXPECT_EQ(to_string(make_schedule("interleaved-1f1b", 2, 0, 2, 2), false),
            "F0 SA0 F1 SA1 RA0c1 F0c1 SA0c1 RA1c1 F1c1 SA1c1 RG0c1 B0c1 SG0c1 RG1c1 B1c1 SG1c1 "
            "RG0 B0 RG1 B1 RED OPT");
  EXPECT_EQ(to_string(make_schedule("interleaved-1f1b", 2, 1, 2, 2), false),
            "RA0 F0 SA0 RA1 F1 SA1 RA0c1 F0c1 RA1c1 F1c1 B0c1 SG0c1 B1c1 SG1c1 RG0 B0 SG0 RG1 B1 "
            "SG1 RED OPT");
}

TEST(InterleavedGolden, v1_warms_up_twice_as_deep_as_1f1b_and_text_round_trips) {
  // Megatron's warm-up, 2 (p - s - 1) forwards, also with one chunk: a bubble as 1F1B's,
  // with more micro-batches in flight.
  EXPECT_EQ(to_string(make_schedule("interleaved-1f1b", 4, 1, 8, 1)),
            "F0 F1 F2 F3 F4 B0 F5 B1 F6 B2 F7 B3 B4 B5 B6 B7");
  const Schedule lowered = make_schedule("interleaved-1f1b", 4, 2, 8, 2);
  EXPECT_EQ(parse_schedule(to_string(lowered, false)), lowered);
}

TEST(InterleavedArguments, micro_batches_not_a_multiple_of_stages_throws) {
  try {
    make_schedule("interleaved-1f1b", 4, 0, 6, 2);
    ADD_FAILURE() << "expected std::invalid_argument";
  } catch (const std::invalid_argument& e) {
    EXPECT_TRUE(contains(e.what(), "micro-batches (6) must be a multiple of the stages (4)"))
        << e.what();
  }
  EXPECT_THROW(make_schedule("1f1b", 4, 0, 8, 2), std::invalid_argument);
}

TEST(CheckerAccepts, interleaved_pp2_to_8_v1_to_4_bubble_is_formula) {
  for (int pp = 2; pp <= 8; ++pp) {
    for (int v = 1; v <= 4; ++v) {
      for (int m = pp; m <= 4 * pp; m += pp) {
        SCOPED_TRACE("pp" + std::to_string(pp) + " v" + std::to_string(v) + " m" +
                     std::to_string(m));
        const CheckReport report = check_schedules(make_schedules("interleaved-1f1b", pp, m, v), m);
        ASSERT_TRUE(report.ok) << report.error;
        EXPECT_NEAR(report.bubble_fraction, interleaved_bubble_formula(pp, m, v), 1e-12);
        for (int s = 0; s < pp; ++s)
          EXPECT_EQ(report.timeline[s].size(), static_cast<size_t>(2 * m * v)) << "stage " << s;
      }
    }
  }
  EXPECT_NEAR(interleaved_bubble_formula(4, 8, 2), 3.0 / 19.0, 1e-15);
}

TEST(CheckerAccepts, interleaved_pp4_m8_v2_in_flight_chunks) {
  // Warm-up 2 (p - s - 1) + (v - 1) p forwards plus the first steady one.
  const CheckReport report = check_schedules(make_schedules("interleaved-1f1b", 4, 8, 2), 8);
  ASSERT_TRUE(report.ok) << report.error;
  EXPECT_EQ(report.max_in_flight, (std::vector<int>{11, 9, 7, 5}));
}

TEST(ZbH1Golden, pp4_m8) {
  EXPECT_EQ(to_string(make_schedule("zb-h1", 4, 0, 8)),
            "F0 F1 F2 F3 BI0 W0 F4 BI1 W1 F5 BI2 W2 F6 BI3 W3 F7 BI4 W4 BI5 W5 BI6 W6 BI7 W7");
  EXPECT_EQ(to_string(make_schedule("zb-h1", 4, 3, 8)),
            "F0 BI0 F1 BI1 F2 BI2 F3 BI3 W0 F4 BI4 W1 F5 BI5 W2 F6 BI6 W3 F7 BI7 W4 W5 W6 W7");
  EXPECT_EQ(to_string(make_schedule("zb-h1", 2, 1, 2), false),
            "RA0 F0 BI0 SG0 RA1 F1 BI1 SG1 W0 W1 RED OPT");
}

TEST(CheckerAccepts, zb_h1_pp1_to_8_m1_to_16_bubble_and_memory) {
  for (int pp = 1; pp <= 8; ++pp) {
    for (int m = 1; m <= 16; ++m) {
      SCOPED_TRACE("pp" + std::to_string(pp) + " m" + std::to_string(m));
      const CheckReport report = check_schedules(make_schedules("zb-h1", pp, m), m);
      ASSERT_TRUE(report.ok) << report.error;
      // No stage holds more micro-batches than 1F1B's first stage.
      for (int s = 0; s < pp; ++s) EXPECT_LE(report.max_in_flight[s], std::min(pp, m));
      if (m >= pp) EXPECT_NEAR(report.bubble_fraction, zb_h1_bubble_formula(pp, m), 1e-12);
      // Never worse than 1F1B's bubble.
      EXPECT_LE(report.bubble_fraction, bubble_formula(pp, m) + 1e-12);
    }
  }
  EXPECT_NEAR(zb_h1_bubble_formula(4, 8), 3.0 / 27.0, 1e-15);
}

TEST(CheckerRejects, weight_half_before_input_half_names_stage_and_instruction) {
  std::vector<Schedule> per_stage = make_schedules("zb-h1", 2, 4);
  Schedule& s1 = per_stage[1];
  std::swap(s1[index_of(s1, "BI0")], s1[index_of(s1, "W0")]);
  const CheckReport report = check_schedules(per_stage, 4);
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.error, "stage 1, instruction")) << report.error;
  EXPECT_TRUE(contains(report.error,
                       "(W0): computes the weight gradient of micro-batch 0 before "
                       "its input gradient (BI)"))
      << report.error;
}

TEST(CheckerRejects, weight_half_missing_before_reduce) {
  std::vector<Schedule> per_stage = make_schedules("zb-h1", 2, 4);
  Schedule& s0 = per_stage[0];
  s0.erase(s0.begin() + index_of(s0, "W3"));
  const CheckReport report = check_schedules(per_stage, 4);
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.error, "stage 0, instruction")) << report.error;
  EXPECT_TRUE(contains(report.error, "(RED): micro-batch 3 is never backwarded")) << report.error;
}

TEST(CheckerRejects, gradient_sent_before_input_half) {
  std::vector<Schedule> per_stage = make_schedules("zb-h1", 2, 2);
  Schedule& s1 = per_stage[1];
  std::swap(s1[index_of(s1, "BI1")], s1[index_of(s1, "SG1")]);
  const CheckReport report = check_schedules(per_stage, 2);
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.error, "stage 1, instruction"));
  EXPECT_TRUE(contains(report.error,
                       "(SG1): sends the gradient of micro-batch 1 before its "
                       "backward"))
      << report.error;
}

TEST(CheckerRejects, interleaved_chunks_swapped_deadlock) {
  // Stage 0 waits for chunk 1's activation before sending chunk 0's, which stage 1 needs
  // first: a cycle through the ring.
  std::vector<Schedule> per_stage = make_schedules("interleaved-1f1b", 2, 2, 2);
  per_stage[0] = parse_schedule(
      "RA0c1 F0 SA0 F1 SA1 F0c1 SA0c1 RA1c1 F1c1 SA1c1 RG0c1 B0c1 SG0c1 RG1c1 B1c1 SG1c1 RG0 B0 "
      "RG1 B1 RED OPT");
  const CheckReport report = check_schedules(per_stage, 2);
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.error, "deadlock: stages 0, 1 wait on each other")) << report.error;
  EXPECT_TRUE(contains(report.error, "stage 0, instruction 0 (RA0c1) waits for SA0 from stage 1"))
      << report.error;
}

TEST(CheckerRejects, interleaved_chunk_gradient_out_of_fifo_order) {
  // Stage 0's chunk 1 takes the last chunk's gradients of micro-batches 1 then 0, but
  // stage 1 sends them in order 0, 1 over the FIFO channel.
  std::vector<Schedule> per_stage = make_schedules("interleaved-1f1b", 2, 2, 2);
  per_stage[0] = parse_schedule(
      "F0 SA0 F1 SA1 RA0c1 F0c1 SA0c1 RA1c1 F1c1 SA1c1 RG1c1 B1c1 SG1c1 RG0c1 B0c1 SG0c1 RG0 B0 "
      "RG1 B1 RED OPT");
  const CheckReport report = check_schedules(per_stage, 2);
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.error,
                       "stage 0, instruction 10 (RG1c1): the next gradient from stage 1 is stage "
                       "1, instruction 11 (SG0c1), not SG1c1 (channels are FIFO); stage 1 sends "
                       "it out of order"))
      << report.error;
}

}  // namespace
}  // namespace trident::pipeline
