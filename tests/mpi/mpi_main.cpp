// main() of the multi-rank tests: MPI around GoogleTest. The job fails on every rank when
// any rank's test fails, when the world size is not the selected tests' declared one, when
// the filter selects no test and when any test skips: a multi-rank test that did not run is
// a failure. Rank 0 closes with each selected test's outcome on every rank, so that a job
// running several layouts names the one that failed. `test_mpi --list-ctest` prints the
// ctest entries without starting MPI; `--share-launch NAME=CASE[,CASE...]` (repeatable)
// adds a shared launch first, so that tests can try the listing's checks on one.
#include <gtest/gtest.h>
#include <mpi.h>

#include <cstdio>
#include <cstring>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "mpi_cases.h"
#include "mpi_report.h"

namespace {

bool has_flag(int argc, char** argv, const char* flag) {
  for (int i = 1; i < argc; ++i)
    if (std::strcmp(argv[i], flag) == 0) return true;
  return false;
}

// Each `--share-launch NAME=CASE[,CASE...]` as a shared launch (no cases after '=': an
// empty one). False, with the reason on stderr, for one without '=' or a value.
bool add_shared_launches(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--share-launch") != 0) continue;
    const std::string value = i + 1 < argc ? argv[i + 1] : "";
    const size_t eq = value.find('=');
    if (eq == std::string::npos) {
      std::cerr << "test_mpi: --share-launch takes NAME=CASE[,CASE...], got '" << value << "'\n";
      return false;
    }
    std::vector<std::string> cases;
    std::istringstream list(value.substr(eq + 1));
    for (std::string name; std::getline(list, name, ',');) cases.push_back(name);
    trident::testing::share_launch(value.substr(0, eq), cases);
    ++i;
  }
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  if (has_flag(argc, argv, "--list-ctest")) {
    ::testing::InitGoogleTest(&argc, argv);  // registers the parameterised tests
    if (!add_shared_launches(argc, argv)) return 2;
    return trident::testing::list_ctest(std::cout, std::cerr);
  }
  int provided = 0;
  MPI_Init_thread(&argc, &argv, MPI_THREAD_MULTIPLE, &provided);
  int world = 0, rank = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  ::testing::InitGoogleTest(&argc, argv);
  auto* check = new trident::testing::WorldSizeCheck(world, rank);
  ::testing::AddGlobalTestEnvironment(check);  // gtest owns it, until the program ends
  const int failed = RUN_ALL_TESTS();

  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  // Every rank selects the same tests; a skip may happen on some ranks only.
  int local[2] = {failed, unit.skipped_test_count()}, job[2] = {0, 0};
  MPI_Allreduce(local, job, 2, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  const bool none_selected = unit.test_to_run_count() == 0;
  const std::vector<trident::testing::TestOutcomes> outcomes =
      trident::testing::gather_outcomes(MPI_COMM_WORLD);
  if (rank == 0) {
    // The reason last, after every rank's gtest output.
    std::fflush(stdout);
    if (!none_selected)
      std::fprintf(stderr, "test_mpi: %s", trident::testing::format_outcomes(outcomes).c_str());
    if (none_selected)
      std::fprintf(stderr, "test_mpi: no test matches --gtest_filter=%s\n",
                   GTEST_FLAG_GET(filter).c_str());
    else if (!check->problem().empty())
      std::fprintf(stderr, "test_mpi: %s\n", check->problem().c_str());
    else if (job[1] > 0)
      std::fprintf(stderr,
                   "test_mpi: %d test(s) skipped on some rank; a multi-rank test that does not "
                   "run fails the job\n",
                   job[1]);
  }
  MPI_Finalize();
  return job[0] != 0 || job[1] > 0 || none_selected ? 1 : 0;
}
