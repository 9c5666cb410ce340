// The registry of multi-rank ctest entries, its listing for CMake and the world-size check.
#include "mpi_cases.h"

#include <algorithm>  // std::max
#include <map>
#include <set>
#include <sstream>

namespace trident::testing {
namespace {

std::vector<MpiCase>& registry() {
  static std::vector<MpiCase> cases;  // a function-local static: filled by static initialisers
  return cases;
}

struct SharedLaunch {
  std::string name;
  std::vector<std::string> cases;
};

std::vector<SharedLaunch>& launches() {
  static std::vector<SharedLaunch> shared;
  return shared;
}

const MpiCase* find_case(const std::string& name) {
  for (const MpiCase& c : registry())
    if (c.name == name) return &c;
  return nullptr;
}

// gtest's glob: `*` any run of characters, `?` one character.
bool glob_matches(const char* pattern, const char* s) {
  if (*pattern == '\0') return *s == '\0';
  if (*pattern == '*') return glob_matches(pattern + 1, s) || (*s && glob_matches(pattern, s + 1));
  return *s && (*pattern == '?' || *pattern == *s) && glob_matches(pattern + 1, s + 1);
}

// Every registered test's full name, with whether this run's filter selects it.
std::vector<std::pair<std::string, bool>> all_tests() {
  std::vector<std::pair<std::string, bool>> tests;
  const ::testing::UnitTest& unit = *::testing::UnitTest::GetInstance();
  for (int i = 0; i < unit.total_test_suite_count(); ++i) {
    const ::testing::TestSuite& suite = *unit.GetTestSuite(i);
    for (int j = 0; j < suite.total_test_count(); ++j) {
      const ::testing::TestInfo& info = *suite.GetTestInfo(j);
      tests.emplace_back(std::string(info.test_suite_name()) + "." + info.name(),
                         info.should_run());
    }
  }
  return tests;
}

// The cases whose filter selects `test`.
std::vector<const MpiCase*> cases_of(const std::string& test) {
  std::vector<const MpiCase*> found;
  for (const MpiCase& c : registry())
    if (filter_matches(c.filter, test)) found.push_back(&c);
  return found;
}

}  // namespace

bool register_mpi_cases(std::vector<MpiCase> cases) {
  for (MpiCase& c : cases) registry().push_back(std::move(c));
  return true;
}

bool share_launch(std::string name, std::vector<std::string> cases) {
  launches().push_back({std::move(name), std::move(cases)});
  return true;
}

const std::vector<MpiCase>& mpi_cases() { return registry(); }

MpiCase grouped_case(const std::string& name, int ranks, const std::vector<std::string>& tests,
                     int seconds_each) {
  std::string filter;
  for (const std::string& test : tests) filter += (filter.empty() ? "" : ":") + test;
  return MpiCase{name, ranks, filter,
                 std::max(MpiCase{}.timeout_s, seconds_each * static_cast<int>(tests.size()))};
}

bool filter_matches(const std::string& filter, const std::string& test) {
  std::istringstream patterns(filter);
  std::string pattern;
  while (std::getline(patterns, pattern, ':'))
    if (glob_matches(pattern.c_str(), test.c_str())) return true;
  return false;
}

int list_ctest(std::ostream& out, std::ostream& err) {
  int problems = 0;
  std::set<std::string> names;
  for (const MpiCase& c : registry()) {
    if (!names.insert(c.name).second) {
      err << "mpi case " << c.name << " is declared twice\n";
      ++problems;
    }
    // A name is a ctest name and label: no space, and none of the labels' separators.
    if (c.ranks < 1 || c.name.find_first_of(" ,;") != std::string::npos ||
        c.filter.find_first_of(" -") != std::string::npos) {
      err << "mpi case " << c.name << ": needs ranks >= 1, a name without spaces, ',' or ';', "
          << "a filter without spaces, and no negative filter\n";
      ++problems;
    }
  }
  // A test in no case would never run under ctest; in two, twice (perhaps at two sizes).
  const std::vector<std::pair<std::string, bool>> tests = all_tests();
  for (const auto& [test, run] : tests) {
    const std::vector<const MpiCase*> cases = cases_of(test);
    if (cases.size() != 1) {
      err << "test " << test << " is in " << cases.size() << " mpi cases, not 1";
      for (const MpiCase* c : cases) err << " " << c->name;
      err << " (declare it once with register_mpi_cases)\n";
      ++problems;
    }
  }
  // A pattern that selects nothing is misspelt: ctest would run an empty job, or a job of
  // several layouts without the one it names.
  for (const MpiCase& c : registry()) {
    std::istringstream patterns(c.filter);
    std::string pattern;
    while (std::getline(patterns, pattern, ':')) {
      bool any = false;
      for (const auto& [test, run] : tests) any = any || filter_matches(pattern, test);
      if (!any) {
        err << "mpi case " << c.name << ": '" << pattern << "' of its filter selects no test\n";
        ++problems;
      }
    }
  }
  // The shared launches: each case in one at most, known, of one rank count, not aborting.
  std::map<std::string, const SharedLaunch*> launch_of;  // case name -> its launch
  for (const SharedLaunch& launch : launches()) {
    if (!names.insert(launch.name).second) {
      err << "shared launch " << launch.name << " has the name of a case or another launch\n";
      ++problems;
    }
    if (launch.name.find_first_of(" ,;") != std::string::npos || launch.cases.empty()) {
      err << "shared launch " << launch.name << ": needs a name without spaces, ',' or ';', "
          << "and at least one case\n";
      ++problems;
    }
    const MpiCase* first = launch.cases.empty() ? nullptr : find_case(launch.cases[0]);
    for (const std::string& name : launch.cases) {
      const MpiCase* c = find_case(name);
      if (c == nullptr) {
        err << "shared launch " << launch.name << ": no mpi case " << name << "\n";
        ++problems;
        continue;
      }
      if (!launch_of.emplace(name, &launch).second) {
        err << "mpi case " << name << " is in two shared launches\n";
        ++problems;
      }
      if ((first != nullptr && c->ranks != first->ranks) || !c->pass_regex.empty()) {
        err << "shared launch " << launch.name << ": " << name << " has " << c->ranks
            << " ranks against " << (first != nullptr ? first->ranks : 0)
            << (c->pass_regex.empty() ? "" : ", and aborts")
            << "; a launch shares one rank count, and no case of it may be meant to abort\n";
        ++problems;
      }
    }
  }
  if (problems > 0) return 1;
  // One entry per case alone, or per shared launch where its first case was registered.
  std::set<const SharedLaunch*> printed;
  for (const MpiCase& c : registry()) {
    MpiCase entry = c;
    std::string labels = c.name;
    const auto shared = launch_of.find(c.name);
    if (shared != launch_of.end()) {
      const SharedLaunch& launch = *shared->second;
      if (!printed.insert(&launch).second) continue;
      entry = MpiCase{launch.name, c.ranks, "", 0};
      labels.clear();
      for (const std::string& name : launch.cases) {
        const MpiCase& member = *find_case(name);
        entry.filter += (entry.filter.empty() ? "" : ":") + member.filter;
        labels += (labels.empty() ? "" : ",") + member.name;
        entry.timeout_s += member.timeout_s;  // each case's own bound, one after another
      }
    }
    out << entry.name << " " << entry.ranks << " " << entry.filter << " " << entry.timeout_s << " "
        << labels;
    if (!entry.pass_regex.empty()) out << " " << entry.pass_regex;
    out << "\n";
  }
  return 0;
}

void WorldSizeCheck::SetUp() {
  std::map<std::string, int> wrong;  // case name -> ranks it needs
  std::vector<std::string> orphans;
  for (const auto& [test, run] : all_tests()) {
    if (!run) continue;
    const std::vector<const MpiCase*> cases = cases_of(test);
    if (cases.empty()) orphans.push_back(test);
    for (const MpiCase* c : cases)
      if (c->ranks != world_) wrong[c->name] = c->ranks;
  }
  if (wrong.empty() && orphans.empty()) return;
  std::ostringstream message;
  message << "no test ran: the selected tests cannot run on this job:";
  for (const auto& [name, ranks] : wrong)
    message << "\n  " << name << " needs " << ranks << " ranks (mpirun -np " << ranks
            << "), this job has " << world_;
  for (const std::string& test : orphans)
    message << "\n  " << test << " belongs to no mpi case (declare it with register_mpi_cases)";
  problem_ = message.str();
  if (rank_ != 0) FAIL() << "wrong world size for the selected tests (rank 0 says why)";
  FAIL() << problem_;
}

}  // namespace trident::testing
