// Schedules as data: golden compute orders of GPipe and 1F1B, the lowering pass, and
// the text form (printing, parsing, round trips, parse errors).
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <stdexcept>  // std::invalid_argument
#include <string>     // std::string
#include <vector>     // std::vector

#include "pipeline/schedule.h"  // make_schedule, lower, to_string, parse_schedule

namespace trident::pipeline {
namespace {

std::string compute(const std::string& name, int pp, int stage, int m) {
  return to_string(make_schedule(name, pp, stage, m));
}

// Catches the std::invalid_argument that `f` must throw and returns its message.
template <typename F>
std::string error_of(F f) {
  try {
    f();
  } catch (const std::invalid_argument& e) {
    return e.what();
  }
  ADD_FAILURE() << "expected std::invalid_argument";
  return "";
}

TEST(GpipeGolden, pp2_m4) {
  EXPECT_EQ(compute("gpipe", 2, 0, 4), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(compute("gpipe", 2, 1, 4), "F0 F1 F2 F3 B0 B1 B2 B3");
}

TEST(GpipeGolden, pp4_m4) {
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(compute("gpipe", 4, stage, 4), "F0 F1 F2 F3 B0 B1 B2 B3") << "stage " << stage;
  }
}

TEST(GpipeGolden, pp4_m8) {
  for (int stage = 0; stage < 4; ++stage) {
    EXPECT_EQ(compute("gpipe", 4, stage, 8), "F0 F1 F2 F3 F4 F5 F6 F7 B0 B1 B2 B3 B4 B5 B6 B7")
        << "stage " << stage;
  }
}

TEST(OneFOneBGolden, pp2_m4) {
  EXPECT_EQ(compute("1f1b", 2, 0, 4), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(compute("1f1b", 2, 1, 4), "F0 B0 F1 B1 F2 B2 F3 B3");
}

TEST(OneFOneBGolden, pp4_m4) {
  EXPECT_EQ(compute("1f1b", 4, 0, 4), "F0 F1 F2 F3 B0 B1 B2 B3");
  EXPECT_EQ(compute("1f1b", 4, 1, 4), "F0 F1 F2 B0 F3 B1 B2 B3");
  EXPECT_EQ(compute("1f1b", 4, 2, 4), "F0 F1 B0 F2 B1 F3 B2 B3");
  EXPECT_EQ(compute("1f1b", 4, 3, 4), "F0 B0 F1 B1 F2 B2 F3 B3");
}

TEST(OneFOneBGolden, pp4_m8) {
  EXPECT_EQ(compute("1f1b", 4, 0, 8), "F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7");
  EXPECT_EQ(compute("1f1b", 4, 1, 8), "F0 F1 F2 B0 F3 B1 F4 B2 F5 B3 F6 B4 F7 B5 B6 B7");
  EXPECT_EQ(compute("1f1b", 4, 2, 8), "F0 F1 B0 F2 B1 F3 B2 F4 B3 F5 B4 F6 B5 F7 B6 B7");
  EXPECT_EQ(compute("1f1b", 4, 3, 8), "F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7");
}

TEST(OneFOneBGolden, pp4_m2_fewer_micro_batches_than_stages) {
  // Warm-up is capped by m: stages 0 and 1 forward everything before any backward.
  EXPECT_EQ(compute("1f1b", 4, 0, 2), "F0 F1 B0 B1");
  EXPECT_EQ(compute("1f1b", 4, 1, 2), "F0 F1 B0 B1");
  EXPECT_EQ(compute("1f1b", 4, 2, 2), "F0 F1 B0 B1");
  EXPECT_EQ(compute("1f1b", 4, 3, 2), "F0 B0 F1 B1");
}

TEST(LoweredGolden, pp2_m2_1f1b) {
  EXPECT_EQ(to_string(make_schedule("1f1b", 2, 0, 2), false),
            "F0 SA0 F1 SA1 RG0 B0 RG1 B1 RED OPT");
  EXPECT_EQ(to_string(make_schedule("1f1b", 2, 1, 2), false),
            "RA0 F0 B0 SG0 RA1 F1 B1 SG1 RED OPT");
}

TEST(LoweredGolden, pp3_m2_gpipe_middle_stage) {
  EXPECT_EQ(to_string(make_schedule("gpipe", 3, 1, 2), false),
            "RA0 F0 SA0 RA1 F1 SA1 RG0 B0 SG0 RG1 B1 SG1 RED OPT");
}

TEST(LoweredGolden, pp1_m2_single_stage_has_no_communication) {
  EXPECT_EQ(to_string(make_schedule("1f1b", 1, 0, 2), false), "F0 B0 F1 B1 RED OPT");
  EXPECT_EQ(to_string(make_schedule("gpipe", 1, 0, 2), false), "F0 F1 B0 B1 RED OPT");
}

TEST(Lowering, chunks_pp2_v2_only_virtual_ends_skip_communication) {
  const Schedule order = parse_schedule("F0 F0c1 B0c1 B0");
  EXPECT_EQ(to_string(lower(order, 2, 0, 2), false),
            "F0 SA0 RA0c1 F0c1 SA0c1 RG0c1 B0c1 SG0c1 RG0 B0 RED OPT");
  EXPECT_EQ(to_string(lower(order, 2, 1, 2), false),
            "RA0 F0 SA0 RA0c1 F0c1 B0c1 SG0c1 RG0 B0 SG0 RED OPT");
}

TEST(Lowering, rejects_communication_in_a_compute_order) {
  const std::string message = error_of([] { lower(parse_schedule("F0 SA0"), 2, 0); });
  EXPECT_NE(message.find("SA0"), std::string::npos) << message;
  const std::string chunk = error_of([] { lower(parse_schedule("F0c1"), 2, 0); });
  EXPECT_NE(chunk.find("F0c1 names chunk 1 but the stage has 1 chunk(s)"), std::string::npos)
      << chunk;
}

TEST(ScheduleText, round_trip_both_forms_pp1_to_8_m1_to_16) {
  for (const char* name : {"gpipe", "1f1b"}) {
    for (int pp = 1; pp <= 8; ++pp) {
      for (int stage = 0; stage < pp; ++stage) {
        for (int m = 1; m <= 16; ++m) {
          const Schedule full = make_schedule(name, pp, stage, m);
          EXPECT_EQ(parse_schedule(to_string(full, false)), full);
          EXPECT_EQ(parse_schedule(to_string(full, true)), compute_only(full));
          EXPECT_EQ(to_string(parse_schedule(to_string(full, true))), to_string(full));
        }
      }
    }
  }
}

TEST(ScheduleText, parses_chunks_spaces_and_empty_input) {
  const Schedule parsed = parse_schedule("  RA12c3\tF12c3\n SG0 RED  OPT ");
  ASSERT_EQ(parsed.size(), 5u);
  EXPECT_EQ(parsed[0], (Instruction{Op::kRecvActivation, 12, 3}));
  EXPECT_EQ(parsed[1], (Instruction{Op::kForward, 12, 3}));
  EXPECT_EQ(parsed[2], (Instruction{Op::kSendGrad, 0, 0}));
  EXPECT_EQ(parsed[3], (Instruction{Op::kReduceGrads, -1, 0}));
  EXPECT_EQ(parsed[4], (Instruction{Op::kOptimizerStep, -1, 0}));
  EXPECT_EQ(to_string(parsed, false), "RA12c3 F12c3 SG0 RED OPT");
  EXPECT_TRUE(parse_schedule("   ").empty());
}

TEST(ScheduleText, errors_name_token_and_position) {
  const std::string unknown = error_of([] { parse_schedule("F0 X1 B0"); });
  EXPECT_NE(unknown.find("token 1 'X1' at character 3"), std::string::npos) << unknown;
  EXPECT_NE(unknown.find("unknown instruction 'X'"), std::string::npos) << unknown;

  const std::string no_number = error_of([] { parse_schedule("F0 F1 B"); });
  EXPECT_NE(no_number.find("token 2 'B' at character 6"), std::string::npos) << no_number;

  const std::string trailing = error_of([] { parse_schedule("F0x"); });
  EXPECT_NE(trailing.find("token 0 'F0x' at character 0"), std::string::npos) << trailing;

  const std::string red = error_of([] { parse_schedule("RED1"); });
  EXPECT_NE(red.find("RED takes no micro-batch"), std::string::npos) << red;

  const std::string chunk = error_of([] { parse_schedule("F0 F0c"); });
  EXPECT_NE(chunk.find("token 1 'F0c' at character 3"), std::string::npos) << chunk;
  EXPECT_THROW(parse_schedule("f0"), std::invalid_argument);
  EXPECT_THROW(parse_schedule("F-1"), std::invalid_argument);
}

TEST(MakeSchedule, rejects_bad_name_and_counts) {
  const std::string name = error_of([] { make_schedule("zb", 2, 0, 4); });
  EXPECT_NE(name.find("unknown pipeline schedule 'zb'"), std::string::npos) << name;
  const std::string stage = error_of([] { make_schedule("1f1b", 4, 4, 8); });
  EXPECT_NE(stage.find("stage 4 is out of range for 4 stages"), std::string::npos) << stage;
  const std::string stages = error_of([] { make_schedule("gpipe", 0, 0, 8); });
  EXPECT_NE(stages.find("stages must be at least 1, got 0"), std::string::npos) << stages;
  const std::string m = error_of([] { make_schedule("1f1b", 2, 0, 0); });
  EXPECT_NE(m.find("micro-batches must be at least 1, got 0"), std::string::npos) << m;
  EXPECT_THROW(make_schedule("1f1b", 2, -1, 4), std::invalid_argument);
}

TEST(OneFOneBStructure, warm_up_steady_cool_down_counts_pp8_m16) {
  // Before the first backward a stage forwards min(p - s, m) micro-batches: its
  // warm-up plus the first steady forward.
  for (int stage = 0; stage < 8; ++stage) {
    const Schedule order = compute_only(make_schedule("1f1b", 8, stage, 16));
    ASSERT_EQ(order.size(), 32u);
    size_t first_backward = 0;
    while (order[first_backward].op != Op::kBackward) ++first_backward;
    EXPECT_EQ(first_backward, static_cast<size_t>(8 - stage)) << "stage " << stage;
    // The tail after the last forward is the cool-down: stages - stage - 1 backwards.
    size_t last_forward = order.size() - 1;
    while (order[last_forward].op != Op::kForward) --last_forward;
    EXPECT_EQ(order.size() - 1 - last_forward, static_cast<size_t>(8 - stage)) << stage;
  }
}

}  // namespace
}  // namespace trident::pipeline
