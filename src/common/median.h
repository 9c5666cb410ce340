// The median of a handful of timings or losses.
#pragma once
#include <algorithm>  // std::sort
#include <vector>     // std::vector

namespace trident {

/// The middle value of `v`, or the mean of the two middle values when their count is even;
/// `v` must not be empty.
inline double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

}  // namespace trident
