// The schedule checker: accepts every built-in schedule with the expected in-flight
// counts and bubble, measures timelines, and rejects hand-broken schedules with a
// message that says where and why.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <algorithm>  // std::min, std::swap
#include <stdexcept>  // std::invalid_argument
#include <string>     // std::string
#include <utility>    // std::pair
#include <vector>     // std::vector

#include "pipeline/schedule.h"          // make_schedule, parse_schedule, to_string
#include "pipeline/schedule_checker.h"  // check_schedules, bubble_formula

namespace trident::pipeline {
namespace {

size_t index_of(const Schedule& schedule, const std::string& mnemonic) {
  for (size_t k = 0; k < schedule.size(); ++k) {
    if (to_string(schedule[k]) == mnemonic) return k;
  }
  ADD_FAILURE() << mnemonic << " not found in " << to_string(schedule, false);
  return 0;
}

void remove(Schedule& schedule, const std::string& mnemonic) {
  schedule.erase(schedule.begin() + index_of(schedule, mnemonic));
}

void swap(Schedule& schedule, const std::string& a, const std::string& b) {
  std::swap(schedule[index_of(schedule, a)], schedule[index_of(schedule, b)]);
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(CheckerAccepts, every_builtin_schedule_pp1_to_8_m1_to_16) {
  for (const std::string name : {"gpipe", "1f1b"}) {
    for (int pp = 1; pp <= 8; ++pp) {
      for (int m = 1; m <= 16; ++m) {
        SCOPED_TRACE(name + " pp" + std::to_string(pp) + " m" + std::to_string(m));
        const CheckReport report = check_schedules(make_schedules(name, pp, m), m);
        ASSERT_TRUE(report.ok) << report.error;
        EXPECT_TRUE(report.error.empty());
        ASSERT_EQ(report.max_in_flight.size(), static_cast<size_t>(pp));
        for (int s = 0; s < pp; ++s) {
          const int expected = name == "gpipe" ? m : std::min(pp - s, m);
          EXPECT_EQ(report.max_in_flight[s], expected) << "stage " << s;
          EXPECT_EQ(report.timeline[s].size(), static_cast<size_t>(2 * m)) << "stage " << s;
        }
        const double formula = static_cast<double>(pp - 1) / (m + pp - 1);
        EXPECT_NEAR(report.bubble_fraction, formula, 1e-12);
        EXPECT_NEAR(bubble_formula(pp, m), formula, 1e-15);
        EXPECT_NEAR(report.makespan, 3.0 * (m + pp - 1), 1e-12);
      }
    }
  }
}

TEST(CheckerAccepts, bubble_matches_formula_for_unequal_forward_backward_pp4_m8) {
  for (const std::string name : {"gpipe", "1f1b"}) {
    for (double backward : {0.5, 1.0, 3.0}) {
      const CheckReport report = check_schedules(make_schedules(name, 4, 8), 8, 1.0, backward);
      ASSERT_TRUE(report.ok) << report.error;
      EXPECT_NEAR(report.bubble_fraction, 3.0 / 11.0, 1e-12) << name << " b=" << backward;
      EXPECT_NEAR(report.makespan, 11.0 * (1.0 + backward), 1e-12) << name;
    }
  }
}

TEST(CheckerTimeline, pp2_m2_1f1b_start_and_end_of_each_compute) {
  const CheckReport report = check_schedules(make_schedules("1f1b", 2, 2), 2);
  ASSERT_TRUE(report.ok) << report.error;
  using Spans = std::vector<std::pair<double, double>>;
  // Stage 0: F0 F1 B0 B1; B0 waits for stage 1's B0 to end at 4, B1 for its end at 7.
  EXPECT_EQ(report.timeline[0], (Spans{{0, 1}, {1, 2}, {4, 6}, {7, 9}}));
  // Stage 1: F0 B0 F1 B1; F0 waits for stage 0's F0 to end at 1.
  EXPECT_EQ(report.timeline[1], (Spans{{1, 2}, {2, 4}, {4, 5}, {5, 7}}));
  EXPECT_DOUBLE_EQ(report.makespan, 9.0);
  EXPECT_DOUBLE_EQ(report.bubble_fraction, 1.0 / 3.0);  // idle 6 of 18
}

TEST(CheckerAccepts, interleaved_chunks_pp2_v2_m2) {
  // Chunk c of stage s is virtual stage 2c + s: activations go 0 -> 1 -> 0 (chunk 1) -> 1.
  const Schedule order = parse_schedule("F0 F1 F0c1 F1c1 B0c1 B1c1 B0 B1");
  const std::vector<Schedule> per_stage = {lower(order, 2, 0, 2), lower(order, 2, 1, 2)};
  const CheckReport report = check_schedules(per_stage, 2);
  ASSERT_TRUE(report.ok) << report.error;
  EXPECT_EQ(report.max_in_flight, (std::vector<int>{4, 4}));
}

TEST(CheckerRejects, send_removed_pp2_m4_gpipe_names_the_waiting_receive) {
  std::vector<Schedule> per_stage = make_schedules("gpipe", 2, 4);
  remove(per_stage[0], "SA3");
  const CheckReport report = check_schedules(per_stage, 4);
  ASSERT_FALSE(report.ok);
  EXPECT_EQ(report.error,
            "unmatched receive: stage 1, instruction 6 (RA3) waits for SA3 from stage 0, which "
            "stage 0 never sends; also stuck: stage 0, instruction 7 (RG0) waits for SG0 from "
            "stage 1 (stuck stages: 0, 1)");
}

TEST(CheckerRejects, send_removed_pp2_m2_1f1b_sender_finishes) {
  std::vector<Schedule> per_stage = make_schedules("1f1b", 2, 2);
  remove(per_stage[1], "SG1");
  const CheckReport report = check_schedules(per_stage, 2);
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.error, "stage 0, instruction 6 (RG1) waits for SG1 from stage 1"))
      << report.error;
  EXPECT_TRUE(contains(report.error, "stage 1 finished without sending")) << report.error;
}

TEST(CheckerRejects, send_removed_pp4_m8_1f1b_later_send_arrives_instead) {
  std::vector<Schedule> per_stage = make_schedules("1f1b", 4, 8);
  remove(per_stage[1], "SA2");
  const CheckReport report = check_schedules(per_stage, 8);
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.error,
                       "stage 2, instruction 9 (RA2): the next activation from "
                       "stage 1 is stage 1, instruction 13 (SA3), not SA2"))
      << report.error;
  EXPECT_TRUE(contains(report.error, "stage 1 never sends it")) << report.error;
}

TEST(CheckerRejects, swap_makes_deadlock_pp2_m2_gpipe) {
  std::vector<Schedule> per_stage = make_schedules("gpipe", 2, 2);
  swap(per_stage[0], "SA1", "RG0");  // stage 0 now waits for a gradient before sending
  const CheckReport report = check_schedules(per_stage, 2);
  ASSERT_FALSE(report.ok);
  EXPECT_EQ(report.error,
            "deadlock: stages 0, 1 wait on each other: stage 0, instruction 3 (RG0) waits for "
            "SG0 from stage 1; stage 1, instruction 2 (RA1) waits for SA1 from stage 0 (stuck "
            "stages: 0, 1)");
}

TEST(CheckerRejects, swap_makes_deadlock_pp4_m8_1f1b_names_the_cycle) {
  std::vector<Schedule> per_stage = make_schedules("1f1b", 4, 8);
  swap(per_stage[2], "SA0", "RG0");
  const CheckReport report = check_schedules(per_stage, 8);
  ASSERT_FALSE(report.ok);
  EXPECT_TRUE(contains(report.error,
                       "deadlock: stages 2, 3 wait on each other: stage 2, "
                       "instruction 2 (RG0) waits for SG0 from stage 3; stage 3, "
                       "instruction 0 (RA0) waits for SA0 from stage 2"))
      << report.error;
  EXPECT_TRUE(contains(report.error, "(stuck stages: 0, 1, 2, 3)")) << report.error;
}

TEST(CheckerRejects, out_of_order_sends_pp2_m2_gpipe) {
  std::vector<Schedule> per_stage = make_schedules("gpipe", 2, 2);
  per_stage[0] = parse_schedule("F0 F1 SA1 SA0 RG0 B0 RG1 B1 RED OPT");
  const CheckReport report = check_schedules(per_stage, 2);
  ASSERT_FALSE(report.ok);
  EXPECT_EQ(report.error,
            "stage 1, instruction 0 (RA0): the next activation from stage 0 is stage 0, "
            "instruction 2 (SA1), not SA0 (channels are FIFO); stage 0 sends it out of order");
}

TEST(CheckerRejects, micro_batch_backwarded_twice_pp2_m4_1f1b) {
  std::vector<Schedule> per_stage = make_schedules("1f1b", 2, 4);
  per_stage[1] =
      parse_schedule("RA0 F0 B0 SG0 RA1 F1 B1 SG1 RA2 F2 B2 SG2 B2 RA3 F3 B3 SG3 RED OPT");
  const CheckReport report = check_schedules(per_stage, 4);
  ASSERT_FALSE(report.ok);
  EXPECT_EQ(report.error, "stage 1, instruction 12 (B2): micro-batch 2 is backwarded twice");
}

TEST(CheckerRejects, micro_batch_never_backwarded_pp2_m4_1f1b) {
  std::vector<Schedule> per_stage = make_schedules("1f1b", 2, 4);
  remove(per_stage[0], "B3");
  CheckReport report = check_schedules(per_stage, 4);
  ASSERT_FALSE(report.ok);
  EXPECT_EQ(report.error,
            "stage 0, instruction 15 (RED): micro-batch 3 is never backwarded "
            "before gradients are reduced");

  remove(per_stage[0], "RED");
  remove(per_stage[0], "OPT");
  report = check_schedules(per_stage, 4);
  ASSERT_FALSE(report.ok);
  EXPECT_EQ(report.error,
            "stage 0 (end of its 15 instructions): micro-batch 3 is never backwarded");
}

TEST(CheckerRejects, dependencies_within_a_stage) {
  std::vector<Schedule> per_stage = make_schedules("gpipe", 2, 2);
  per_stage[1] = parse_schedule("RA0 F0 F1 RA1 B0 SG0 B1 SG1 RED OPT");
  EXPECT_EQ(check_schedules(per_stage, 2).error,
            "stage 1, instruction 2 (F1): forwards micro-batch 1 before receiving its activation");

  per_stage = make_schedules("gpipe", 2, 2);
  per_stage[0] = parse_schedule("F0 SA0 F1 SA1 RG0 B0 RG1 B1 OPT RED");
  EXPECT_EQ(check_schedules(per_stage, 2).error,
            "stage 0, instruction 8 (OPT): the optimizer steps before ReduceGrads");

  per_stage = make_schedules("1f1b", 2, 2);
  per_stage[1] = parse_schedule("RA0 B0 F0 SG0 RA1 F1 B1 SG1 RED OPT");
  EXPECT_EQ(check_schedules(per_stage, 2).error,
            "stage 1, instruction 1 (B0): micro-batch 0 is backwarded before it is forwarded");
}

TEST(CheckerRejects, communication_past_the_pipeline_ends) {
  std::vector<Schedule> per_stage = make_schedules("gpipe", 2, 1);
  per_stage[0].insert(per_stage[0].begin(), Instruction{Op::kRecvActivation, 0});
  EXPECT_EQ(check_schedules(per_stage, 1).error,
            "stage 0, instruction 0 (RA0): the first stage has no previous stage to receive "
            "activations from");

  per_stage = make_schedules("gpipe", 2, 1);
  per_stage[1] = parse_schedule("RA0 F0 SA0 B0 SG0 RED OPT");
  EXPECT_EQ(
      check_schedules(per_stage, 1).error,
      "stage 1, instruction 2 (SA0): the last stage has no next stage to send activations to");
}

TEST(CheckerRejects, micro_batch_out_of_range) {
  std::vector<Schedule> per_stage = make_schedules("gpipe", 1, 2);
  per_stage[0] = parse_schedule("F0 F2 B0 B2 RED OPT");
  EXPECT_EQ(check_schedules(per_stage, 2).error,
            "stage 0, instruction 1 (F2): micro-batch 2 is out of range for 2 micro-batches");
}

TEST(CheckerArguments, throws_for_bad_input) {
  EXPECT_THROW(check_schedules({}, 4), std::invalid_argument);
  EXPECT_THROW(check_schedules(make_schedules("1f1b", 2, 4), 0), std::invalid_argument);
  EXPECT_THROW(check_schedules(make_schedules("1f1b", 2, 4), 4, 0.0, 2.0), std::invalid_argument);
}

}  // namespace
}  // namespace trident::pipeline
