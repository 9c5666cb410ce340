// `trident schedule`'s printed report (compute order, timeline, in-flight counts, bubble,
// verdict). Its command line goes through the shared parser: tests/scripts/schedule_cli.sh.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <sstream>    // std::ostringstream
#include <stdexcept>  // std::invalid_argument
#include <string>     // std::string
#include <vector>     // std::vector

#include "pipeline/schedule_cli.h"  // print_schedule_report, render_timeline
#include "pipeline/schedule_cli.h"  // run_schedule_command, render_timeline

namespace trident::pipeline {
namespace {

struct Result {
  bool ok;
  std::string out;
};

Result run(const ScheduleReportOptions& options) {
  std::ostringstream out;
  const bool ok = print_schedule_report(options, out);
  return {ok, out.str()};
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

TEST(ScheduleCommand, pp4_m8_1f1b_report) {
  const Result r = run({/*pp=*/4, /*micro_batches=*/8});
  ASSERT_TRUE(r.ok) << r.out;
  EXPECT_TRUE(contains(r.out,
                       "schedule 1f1b, pp 4, micro-batches 8, forward cost 1, backward "
                       "cost 2\n"))
      << r.out;
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
  const Result r = run({/*pp=*/2, /*micro_batches=*/2, "gpipe", /*full=*/true});
  ASSERT_TRUE(r.ok) << r.out;
  EXPECT_TRUE(contains(r.out, "  stage 0: F0 SA0 F1 SA1 RG0 B0 RG1 B1 RED OPT\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "  stage 1: RA0 F0 RA1 F1 B0 SG0 B1 SG1 RED OPT\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "  stage 0: 2\n  stage 1: 2\n")) << r.out;
  EXPECT_TRUE(contains(r.out, "(p-1)/(m+p-1) = 1/3 = 0.333333")) << r.out;
}

TEST(ScheduleCommand, unknown_schedule_throws_before_printing) {
  std::ostringstream out;
  EXPECT_THROW(print_schedule_report({2, 4, "zb"}, out), std::invalid_argument);
  EXPECT_TRUE(out.str().empty()) << out.str();
}

TEST(RenderTimeline, pp2_m2_1f1b_rows) {
  std::vector<Schedule> per_stage = make_schedules("1f1b", 2, 2);
  const CheckReport report = check_schedules(per_stage, 2);
  EXPECT_EQ(render_timeline(per_stage, report, 1.0),
            "  stage 0 |F0F1....B0  ..B1  |\n"
            "  stage 1 |..F0B0  F1B1  ....|\n");
}

}  // namespace
}  // namespace trident::pipeline
