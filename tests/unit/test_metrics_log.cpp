// MetricsLog: a fresh run starts its metrics file empty; a resumed run appends to it and
// never rewrites what an earlier run wrote, so a crash at any moment keeps the history
// (readers take the last record of each step).
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "tier_test_util.h"  // TempDir
#include "train/metrics_log.h"

namespace trident {
namespace {

std::string contents(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

/// The (step, loss) of every record of the file, in order.
std::vector<std::pair<int64_t, double>> records(const std::string& path) {
  std::vector<std::pair<int64_t, double>> out;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    const auto j = nlohmann::json::parse(line);
    out.emplace_back(j.at("step").get<int64_t>(), j.at("loss").get<double>());
  }
  return out;
}

void write_steps(MetricsLog& log, int64_t first, int64_t last, double loss_scale) {
  for (int64_t s = first; s <= last; ++s) {
    StepMetrics m;
    m.step = s;
    m.loss = loss_scale * static_cast<double>(s);
    log.write(m);
  }
}

TEST(MetricsLog, a_resumed_run_appends_and_keeps_the_earlier_records) {
  TempDir dir;
  const std::string path = dir.path + "/metrics.jsonl";
  {
    MetricsLog first(path);
    write_steps(first, 1, 5, 1.0);  // then killed after step 5; its last save was step 3
  }
  const std::string before = contents(path);
  {
    MetricsLog resumed(path, /*resumed_after=*/3);
    // Until the resumed run writes, the file is as the first run left it: a crash now
    // loses nothing.
    EXPECT_EQ(contents(path), before);
    write_steps(resumed, 4, 6, 10.0);
  }
  const std::vector<std::pair<int64_t, double>> want = {{1, 1.0}, {2, 2.0},  {3, 3.0},  {4, 4.0},
                                                        {5, 5.0}, {4, 40.0}, {5, 50.0}, {6, 60.0}};
  EXPECT_EQ(records(path), want);
}

TEST(MetricsLog, a_fresh_run_starts_the_file_empty) {
  TempDir dir;
  const std::string path = dir.path + "/metrics.jsonl";
  {
    MetricsLog earlier(path);
    write_steps(earlier, 1, 3, 1.0);
  }
  {
    MetricsLog fresh(path);
    write_steps(fresh, 1, 2, 7.0);
  }
  const std::vector<std::pair<int64_t, double>> want = {{1, 7.0}, {2, 14.0}};
  EXPECT_EQ(records(path), want);
}

}  // namespace
}  // namespace trident
