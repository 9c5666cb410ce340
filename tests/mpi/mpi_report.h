// The closing report of a multi-rank test job: each selected test's outcome on every rank,
// printed by rank 0, so that a job running several layouts names the one that failed.
#pragma once

#include <mpi.h>

#include <string>
#include <vector>

namespace trident::testing {

/// What one rank saw of one test.
enum class Outcome : char { kPassed = 0, kSkipped = 1, kFailed = 2, kNotRun = 3 };

/// One selected test and what every rank saw of it (indexed by rank).
struct TestOutcomes {
  std::string name;  ///< full gtest name, `Suite.test` or `Prefix/Suite.test/param`
  std::vector<Outcome> by_rank;
  double seconds = 0;  ///< how long it took on rank 0
};

/// Every selected test's outcome on this rank (`by_rank` holds this rank's alone), in the
/// order gtest ran them.
std::vector<TestOutcomes> local_outcomes();

/// Gathers `local_outcomes()` of every rank of `comm` at its rank 0 (empty elsewhere).
/// Every rank selects the same tests, so the lists line up by index.
std::vector<TestOutcomes> gather_outcomes(MPI_Comm comm);

/// The report: one line per test, `ok` or what went wrong and on which ranks.
std::string format_outcomes(const std::vector<TestOutcomes>& tests);

}  // namespace trident::testing
