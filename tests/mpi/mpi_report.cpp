// The closing report of a multi-rank test job: outcomes gathered at rank 0 and printed.
#include "mpi_report.h"

#include <gtest/gtest.h>

#include <algorithm>  // std::max
#include <cstdio>     // std::snprintf

namespace trident::testing {
namespace {

Outcome outcome_of(const ::testing::TestResult& result) {
  if (result.Failed()) return Outcome::kFailed;
  if (result.Skipped()) return Outcome::kSkipped;
  // A test that never started (a failed environment set-up) has no start time.
  if (result.start_timestamp() == 0) return Outcome::kNotRun;
  return Outcome::kPassed;
}

const char* word(Outcome o) {
  switch (o) {
    case Outcome::kPassed:
      return "ok";
    case Outcome::kSkipped:
      return "SKIPPED";
    case Outcome::kFailed:
      return "FAILED";
    case Outcome::kNotRun:
      return "NOT RUN";
  }
  return "?";
}

// "0,1,5": the ranks of `by_rank` whose outcome is `o`.
std::string ranks_with(const std::vector<Outcome>& by_rank, Outcome o) {
  std::string ranks;
  for (size_t r = 0; r < by_rank.size(); ++r)
    if (by_rank[r] == o) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
  return ranks;
}

}  // namespace

std::vector<TestOutcomes> local_outcomes() {
  std::vector<TestOutcomes> tests;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const ::testing::TestInfo& info = *suite.GetTestInfo(j);
      if (!info.should_run()) continue;
      const ::testing::TestResult& result = *info.result();
      tests.push_back({std::string(info.test_suite_name()) + "." + info.name(),
                       {outcome_of(result)},
                       static_cast<double>(result.elapsed_time()) / 1000.0});
    }
  }
  return tests;
}

std::vector<TestOutcomes> gather_outcomes(MPI_Comm comm) {
  int world = 0, rank = 0;
  MPI_Comm_size(comm, &world);
  MPI_Comm_rank(comm, &rank);
  std::vector<TestOutcomes> tests = local_outcomes();
  const int n = static_cast<int>(tests.size());
  std::vector<char> mine(n), all(rank == 0 ? static_cast<size_t>(n) * world : 0);
  for (int t = 0; t < n; ++t) mine[t] = static_cast<char>(tests[t].by_rank[0]);
  MPI_Gather(mine.data(), n, MPI_CHAR, all.data(), n, MPI_CHAR, 0, comm);
  if (rank != 0) return {};
  for (int t = 0; t < n; ++t) {
    tests[t].by_rank.resize(world);
    for (int r = 0; r < world; ++r)
      tests[t].by_rank[r] = static_cast<Outcome>(all[static_cast<size_t>(r) * n + t]);
  }
  return tests;
}

std::string format_outcomes(const std::vector<TestOutcomes>& tests) {
  int not_ok = 0;
  std::string lines;
  for (const TestOutcomes& t : tests) {
    // A test fails the job when it fails (or skips) on any one rank: show the worst.
    Outcome worst = Outcome::kPassed;
    for (Outcome o : t.by_rank) worst = std::max(worst, o);
    char head[48];
    std::snprintf(head, sizeof head, "  %-8s%7.1f s  ", word(worst), t.seconds);
    lines += head + t.name;
    if (worst != Outcome::kPassed) {
      ++not_ok;
      for (Outcome o : {Outcome::kFailed, Outcome::kSkipped, Outcome::kNotRun}) {
        const std::string ranks = ranks_with(t.by_rank, o);
        if (!ranks.empty()) lines += std::string("  (") + word(o) + " on rank " + ranks + ")";
      }
    }
    lines += "\n";
  }
  const size_t world = tests.empty() ? 0 : tests.front().by_rank.size();
  return std::to_string(tests.size()) + " test(s) on " + std::to_string(world) + " rank(s), " +
         std::to_string(not_ok) + " not ok:\n" + lines;
}

}  // namespace trident::testing
