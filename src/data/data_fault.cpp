// TRIDENT_DATA_FAULT: read once, then a range check per batch.
#include "data/data_fault.h"

#include <cstdio>   // std::fprintf, std::sscanf
#include <cstdlib>  // std::getenv
#include <sstream>  // std::istringstream
#include <string>
#include <vector>

#include "common/counter_rng.h"  // random_u64

namespace trident::data {
namespace {

struct FaultWindow {
  long long first = 0, last = -1;
};

/// The windows of TRIDENT_DATA_FAULT ("15-16,21"); none when unset or malformed.
std::vector<FaultWindow> fault_windows() {
  std::vector<FaultWindow> windows;
  const char* env = std::getenv("TRIDENT_DATA_FAULT");
  if (env == nullptr) return windows;
  std::istringstream items(env);
  std::string item;
  while (std::getline(items, item, ',')) {
    FaultWindow w;
    const int read = std::sscanf(item.c_str(), "%lld-%lld", &w.first, &w.last);
    if (read == 1) w.last = w.first;
    if (read < 1 || w.first < 1 || w.last < w.first) {
      std::fprintf(stderr, "TRIDENT_DATA_FAULT=%s is not FIRST-LAST,... (batches from 1)\n", env);
      return {};
    }
    windows.push_back(w);
  }
  return windows;
}

}  // namespace

void apply_data_fault(int64_t batch, int64_t first, int64_t count, int64_t row, int64_t vocab,
                      int32_t* tokens) {
  static const std::vector<FaultWindow> windows = fault_windows();
  bool hit = false;
  for (const FaultWindow& w : windows) hit = hit || (batch >= w.first && batch <= w.last);
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

}  // namespace trident::data
