// `trident schedule`: the printed report (compute order, timeline, in-flight counts,
// bubble, verdict) and the handling of bad arguments.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <sstream>  // std::ostringstream
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "pipeline/schedule_cli.h"  // run_schedule_command, render_timeline

namespace trident::pipeline {
namespace {

struct Result {
  int code;
  std::string out;
  std::string err;
};

Result run(const std::vector<std::string>& args) {
  std::ostringstream out;
  std::ostringstream err;
  const int code = run_schedule_command(args, out, err);
  return {code, out.str(), err.str()};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ScheduleCommand, pp4_m8_1f1b_report) {
  const Result r = run({"--pp", "4", "--micro-batches", "8"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(r.err.empty());
  EXPECT_TRUE(contains(r.out, "  stage 0: F0 F1 F2 F3 B0 F4 B1 F5 B2 F6 B3 F7 B4 B5 B6 B7\n"));
  EXPECT_TRUE(contains(r.out, "  stage 3: F0 B0 F1 B1 F2 B2 F3 B3 F4 B4 F5 B5 F6 B6 F7 B7\n"));
  // 2 columns per forward unit; stage 3 starts after three forwards upstream.
  EXPECT_TRUE(contains(r.out,
                       "  stage 0 |F0F1F2F3............B0  F4B1  F5B2  F6B3  F7B4  "
                       "..B5  ..B6  ..B7  |\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out,
                       "  stage 3 |......F0B0  F1B1  F2B2  F3B3  F4B4  F5B5  F6B6  F7B7  "
                       "............|\n"))
      << r.out;
  EXPECT_TRUE(contains(r.out, "  stage 0: 4\n  stage 1: 3\n  stage 2: 2\n  stage 3: 1\n"));
  EXPECT_TRUE(contains(r.out, "bubble fraction: 0.272727"));
  EXPECT_TRUE(contains(r.out, "(p-1)/(m+p-1) = 3/11 = 0.272727"));
  EXPECT_TRUE(contains(r.out, "checker: ok"));
  EXPECT_FALSE(contains(r.out, "RA0")) << "sends and receives only with --full";
}

TEST(ScheduleCommand, pp2_m2_gpipe_full_prints_every_instruction) {
  const Result r = run({"--pp=2", "--micro-batches=2", "--schedule", "gpipe", "--full"});
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_TRUE(contains(r.out, "  stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 RED OPT\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "  stage 1: RA0 F0 RA1 F1 B0 SG0 B1 SG1 RED OPT\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "  stage 0: 2\n  stage 1: 2\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "(p-1)/(m+p-1) = 1/3 = 0.333333")) << r.out;
}

TEST(ScheduleCommand, help_prints_usage) {
  const Result r = run({"--help"});
  EXPECT_EQ(r.code, 0);
  EXPECT_TRUE(contains(r.out, "usage: trident schedule --pp P --micro-batches M"));
  EXPECT_TRUE(r.err.empty());
}

TEST(ScheduleCommand, bad_arguments_name_the_argument_and_return_2) {
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--pp", "0", "--micro-batches", "4"}, "--pp expects a positive integer, got '0'"},
      {{"--pp", "2x", "--micro-batches", "4"}, "--pp expects a positive integer, got '2x'"},
      {{"--pp", "2", "--micro-batches"}, "--micro-batches needs a value"},
      {{"--micro-batches", "4"}, "--pp is required"},
      {{"--pp", "2"}, "--micro-batches is required"},
      {{"--pp", "2", "--micro-batches", "4", "--schedule", "zb"},
       "--schedule must be 1f1b or gpipe, got 'zb'"},
      {{"--pp", "2", "--micro-batches", "4", "--verbose"}, "unknown argument '--verbose'"},
      {{"--pp", "2", "--micro-batches", "4", "--backward-cost", "-1"},
       "--backward-cost expects a positive number, got '-1'"},
  };
  for (const auto& [args, message] : cases) {
    const Result r = run(args);
    EXPECT_EQ(r.code, 2) << message;
    EXPECT_TRUE(contains(r.err, "trident schedule: " + message)) << r.err;
    EXPECT_TRUE(r.out.empty()) << message;
  }
}

TEST(RenderTimeline, pp2_m2_1f1b_rows) {
  std::vector<Schedule> per_stage = {one_f_one_b(2, 0, 2), one_f_one_b(2, 1, 2)};
  const CheckReport report = check_schedules(per_stage, 2);
  EXPECT_EQ(render_timeline(per_stage, report, 1.0),
            "  stage 0 |F0F1....B0  ..B1  |\n"
            "  stage 1 |..F0B0  F1B1  ....|\n");
}

}  // namespace
}  // namespace trident::pipeline
