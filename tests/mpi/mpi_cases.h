// The multi-rank test cases: each ctest entry (name, rank count, gtest filter) is declared
// once, here in C++, beside the tests it runs; the test main lists them for CMake and
// refuses a job whose world size is not the one its selected tests declared.
#pragma once

#include <gtest/gtest.h>

#include <ostream>
#include <string>
#include <vector>

namespace trident::testing {

/// One ctest entry: `mpirun -np ranks test_mpi --gtest_filter=filter`.
struct MpiCase {
  std::string name;        ///< ctest name, naming the layout (`parity_dp2_pp2_tp2_...`)
  int ranks = 1;           ///< world size every test the filter selects needs
  std::string filter;      ///< full gtest names or patterns (`*`, `?`), `:`-separated
  int timeout_s = 600;     ///< ctest TIMEOUT
  std::string pass_regex;  ///< set when the job is meant to abort: ctest passes on this output
};

/// One ctest entry that runs several `tests` (full gtest names) of `ranks` ranks in one
/// mpirun: each start of mpirun and of the ranks costs a second or more, longer than many a
/// layout's own run. The job's closing report gives each test's outcome; the timeout is
/// `seconds_each` per test, and never under 600 s.
MpiCase grouped_case(const std::string& name, int ranks, const std::vector<std::string>& tests,
                     int seconds_each = 60);

/// Adds `cases` to the registry. Call at namespace scope, so that registration happens
/// before main: `const bool kRegistered = register_mpi_cases({...});`.
bool register_mpi_cases(std::vector<MpiCase> cases);

/// Runs the registered cases named `cases` in one mpirun, as the one ctest entry `name`
/// (labelled with each case's name, so that `ctest -L CASE` still selects it): each start
/// of mpirun and of its ranks loads libtorch on every rank (0.6 s of CPU a rank here), far
/// longer than many a small case's own run. The cases must share a rank count and none may
/// be meant to abort (a pass_regex); a case belongs to one launch at most. The entry's
/// timeout is the sum of its cases'. Call at namespace scope, like register_mpi_cases.
bool share_launch(std::string name, std::vector<std::string> cases);

/// Every registered case, in registration order.
const std::vector<MpiCase>& mpi_cases();

/// Whether the full gtest name `test` matches `filter` (gtest's `*`, `?` and `:`).
bool filter_matches(const std::string& filter, const std::string& test);

/// Checks the registry against the registered tests (every test in exactly one case, each
/// `:`-separated pattern of a filter selecting a test, names unique, shared launches of
/// known cases of one rank count), then prints one line per ctest entry, `name ranks filter
/// timeout_s labels [pass_regex]` (labels: the `,`-separated names of the cases it runs),
/// for tests/mpi_discover.cmake: a case alone, or a shared launch where its first case was
/// registered. Needs no MPI.
/// Returns the exit code: non-zero, with the problems on `err`, when the registry is wrong.
int list_ctest(std::ostream& out, std::ostream& err);

/// Fails the run before any test starts when a selected test belongs to no case or its
/// case declares another rank count than the job's world size: the message names the
/// ranks needed and given. Only `rank` 0 prints the whole message.
class WorldSizeCheck : public ::testing::Environment {
 public:
  WorldSizeCheck(int world, int rank) : world_(world), rank_(rank) {}
  void SetUp() override;
  /// Why the selected tests could not run; empty when they could.
  const std::string& problem() const { return problem_; }

 private:
  int world_, rank_;
  std::string problem_;
};

}  // namespace trident::testing
