// Calibration's timing of several measurements in turn: the trials alternate between the
// measurements, so that a spell of the machine running slower or faster falls on each
// alike, and each call's time comes out as timed alone.
#include <gtest/gtest.h>

#include <chrono>      // std::chrono::milliseconds
#include <functional>  // std::function
#include <string>      // std::string
#include <thread>      // std::this_thread::sleep_for
#include <vector>      // std::vector

#include "parallel/local_communicator.h"  // LocalCommunicator
#include "plan/calibrate/timing.h"        // times_per_call_in_turn

namespace trident::calibrate {
namespace {

/// `order` with each run of one letter written once: "aabbba" -> "aba".
std::string runs(const std::string& order) {
  std::string out;
  for (char c : order)
    if (out.empty() || out.back() != c) out += c;
  return out;
}

TEST(CalibrateTiming, takes_the_trials_of_several_measurements_in_turn) {
  LocalCommunicator world("world", 0);
  std::string order;
  auto sleeper = [&order](char name, int ms) -> std::function<void()> {
    return [&order, name, ms] {
      order += name;
      std::this_thread::sleep_for(std::chrono::milliseconds(ms));
    };
  };
  const std::vector<double> s =
      times_per_call_in_turn({sleeper('a', 2), sleeper('b', 6)}, {0.05, 0.1}, world);
  ASSERT_EQ(s.size(), 2u);
  // One warm-up call each, then five trials each, the measurements taking turns.
  EXPECT_EQ(runs(order), "abababababab");
  // Each call's time as if timed alone: a sleep takes at least its length, and the short
  // call's time holds none of the long one's (which would make it 8 ms); the margins above
  // leave room for a loaded machine's late wake-ups.
  EXPECT_GE(s[0], 0.002);
  EXPECT_LT(s[0], 0.005);
  EXPECT_GE(s[1], 0.006);
  EXPECT_LT(s[1], 0.012);
}

}  // namespace
}  // namespace trident::calibrate
