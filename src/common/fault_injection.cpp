// The fault-injection hooks: each reads its environment variable once.
#include "common/fault_injection.h"

#include <csignal>    // std::raise, SIGKILL
#include <cstdio>     // std::fprintf, std::sscanf
#include <cstdlib>    // std::getenv, std::strtoll
#include <sstream>    // std::istringstream
#include <stdexcept>  // std::invalid_argument
#include <string>
#include <vector>

#include "common/counter_rng.h"  // random_u64

namespace trident::fault {
namespace {

/// TRIDENT_CHECKPOINT_FAULT parsed: the point ("" when unset) and the step (-1: every save).
struct CheckpointFault {
  std::string point;
  long long step = -1;
};

CheckpointFault checkpoint_fault() {
  CheckpointFault f;
  const char* env = std::getenv("TRIDENT_CHECKPOINT_FAULT");
  if (env == nullptr) return f;
  f.point = env;
  const size_t at = f.point.find('@');
  if (at != std::string::npos) {
    const std::string step = f.point.substr(at + 1);
    char* end = nullptr;
    f.step = std::strtoll(step.c_str(), &end, 10);
    if (step.empty() || *end != '\0' || f.step < 0)
      throw std::invalid_argument(std::string("TRIDENT_CHECKPOINT_FAULT=") + env +
                                  ": the step after @ is not a number; unset it, or give "
                                  "<point>[@<step>]");
    f.point = f.point.substr(0, at);
  }
  return f;
}

/// The batch windows of TRIDENT_DATA_FAULT ("15-16,21"); none when unset.
struct BatchWindow {
  long long first = 0, last = -1;
};

std::vector<BatchWindow> data_fault_windows() {
  std::vector<BatchWindow> windows;
  const char* env = std::getenv("TRIDENT_DATA_FAULT");
  if (env == nullptr) return windows;
  std::istringstream items(env);
  std::string item;
  while (std::getline(items, item, ',')) {
    BatchWindow w;
    const int read = std::sscanf(item.c_str(), "%lld-%lld", &w.first, &w.last);
    if (read == 1) w.last = w.first;
    if (read < 1 || w.first < 1 || w.last < w.first)
      throw std::invalid_argument(std::string("TRIDENT_DATA_FAULT=") + env +
                                  " is not FIRST-LAST,... (batches from 1); unset it or fix it");
    windows.push_back(w);
  }
  return windows;
}

/// TRIDENT_PREEMPT_AFTER parsed: the step (-1 when unset).
long long preempt_step() {
  const char* env = std::getenv("TRIDENT_PREEMPT_AFTER");
  if (env == nullptr) return -1;
  char* end = nullptr;
  const long long step = std::strtoll(env, &end, 10);
  if (*env == '\0' || *end != '\0' || step < 0)
    throw std::invalid_argument(std::string("TRIDENT_PREEMPT_AFTER=") + env +
                                " is not a step number; unset it or fix it");
  return step;
}

}  // namespace

void preempt_after_step(int64_t step) {
  static const long long at = preempt_step();
  if (at < 0 || at != step) return;
  std::fprintf(stderr, "TRIDENT_PREEMPT_AFTER: raising SIGTERM after step %lld\n",
               static_cast<long long>(step));
  std::fflush(stderr);
  std::raise(SIGTERM);
}

void kill_at_checkpoint_point(const char* point, int64_t step) {
  static const CheckpointFault fault = checkpoint_fault();
  if (fault.point != point || (fault.step >= 0 && fault.step != step)) return;
  std::fprintf(stderr,
               "TRIDENT_CHECKPOINT_FAULT: killing this rank at %s of the save of step %lld\n",
               point, static_cast<long long>(step));
  std::fflush(stderr);
  std::raise(SIGKILL);
}

void corrupt_batch(int64_t batch, int64_t first, int64_t count, int64_t row, int64_t vocab,
                   int32_t* tokens) {
  static const std::vector<BatchWindow> windows = data_fault_windows();
  bool hit = false;
  for (const BatchWindow& w : windows) hit = hit || (batch >= w.first && batch <= w.last);
  if (!hit) return;
  constexpr uint64_t kFaultKey = 0x5eed'fa17'0000'0001ULL;
  for (int64_t k = 0; k < count; ++k) {
    const uint64_t stream =
        random_u64(kFaultKey, static_cast<uint64_t>(batch), static_cast<uint64_t>(first + k));
    for (int64_t t = 0; t < row; ++t)
      tokens[k * row + t] = static_cast<int32_t>(random_u64(stream, static_cast<uint64_t>(t)) %
                                                 static_cast<uint64_t>(vocab));
  }
}

}  // namespace trident::fault
