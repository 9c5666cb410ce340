// Calibration's timing of calls: batches doubling until a trial's time has passed, the
// median of five trials, and several measurements taking their trials in turn, so that a
// spell of the machine running slower or faster falls on each alike. A test clock, which
// the timed calls advance, makes every count and time exact.
#include <gtest/gtest.h>

#include <chrono>      // std::chrono::milliseconds
#include <functional>  // std::function
#include <string>      // std::string
#include <thread>      // std::this_thread::sleep_for
#include <vector>      // std::vector

#include "parallel/local_communicator.h"  // LocalCommunicator
#include "plan/calibrate/timing.h"        // times_per_call_in_turn, time_per_call, Clock

namespace trident::calibrate {
namespace {

/// `text` `n` times over.
std::string repeat(const std::string& text, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += text;
  return out;
}

TEST(CalibrateTiming, takes_the_trials_of_several_measurements_in_turn) {
  LocalCommunicator world("world", 0);
  double now = 0;
  const Clock clock{[&now] { return now; }};
  std::string order;
  // A call that takes `seconds` of the test clock.
  auto call = [&](char name, double seconds) -> std::function<void()> {
    return [&order, &now, name, seconds] {
      order += name;
      now += seconds;
    };
  };
  const std::vector<double> s =
      times_per_call_in_turn({call('a', 0.002), call('b', 0.006)}, {0.05, 0.1}, world, clock);
  ASSERT_EQ(s.size(), 2u);
  // One warm-up call each, then five trials each, the measurements taking turns. A trial
  // doubles its batch until its fifth of min_s has passed: a's 10 ms after 1 + 2 + 4 calls
  // (14 ms), b's 20 ms after 7 too (42 ms).
  EXPECT_EQ(order, "ab" + repeat("aaaaaaabbbbbbb", 5));
  // Each call's time as if timed alone: the short call's holds none of the long one's.
  EXPECT_NEAR(s[0], 0.002, 1e-15);
  EXPECT_NEAR(s[1], 0.006, 1e-15);
}

TEST(CalibrateTiming, the_median_trial_gives_the_time_and_the_figure) {
  LocalCommunicator world("world", 0);
  double now = 0, counter = 0;
  const Clock clock{[&now] { return now; }};
  // The warm-up call takes 8 s and counts 100; the calls of the five trials then take 0.5,
  // 0.125, 0.375, 0.25 and 0.4375 s (each trial one call, at least its 0.125 s: sums of
  // these are exact) and count 1 to 5.
  const std::vector<double> takes = {8, 0.5, 0.125, 0.375, 0.25, 0.4375};
  const std::vector<double> counts = {100, 1, 2, 3, 4, 5};
  size_t calls = 0;
  auto fn = [&] {
    now += takes.at(calls);
    counter += counts.at(calls);
    ++calls;
  };
  const PerCall p = time_per_call(
      fn, 0.625, world, [&counter] { return counter; }, clock);
  EXPECT_EQ(calls, 6u);
  // The median trial, the third: its time and what the counter grew over it.
  EXPECT_EQ(p.seconds, 0.375);
  EXPECT_EQ(p.figure, 3.0);
}

TEST(CalibrateTiming, the_steady_clock_times_a_sleep_at_least_its_length) {
  // The default clock is real time: a sleep lasts at least what it asks for (never less,
  // however loaded the machine), so this bound holds on any machine.
  LocalCommunicator world("world", 0);
  const double s =
      time_per_call([] { std::this_thread::sleep_for(std::chrono::milliseconds(2)); }, 0.01, world);
  EXPECT_GE(s, 0.002);
}

}  // namespace
}  // namespace trident::calibrate
