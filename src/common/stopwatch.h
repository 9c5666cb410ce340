// Elapsed wall time for the timings that metrics report (tier waits, checkpoint stalls).
#pragma once
#include <chrono>  // std::chrono::steady_clock

namespace trident {

/// Seconds from `start` to now, on the steady clock (never jumps with the wall clock).
inline double seconds_since(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

}  // namespace trident
