// Which source each sequence of a mixture comes from: weights quantised to whole slots of
// a short period, laid out by smooth weighted round-robin, so every prefix is near its
// weights and sequence n's source and its running index there are pure arithmetic on n.
#pragma once

#include <cstdint>  // int64_t
#include <string>   // std::string
#include <vector>   // std::vector

namespace trident::data {

/// Global sequence n (= data batch * G + index) → (source, running index within it).
class MixSchedule {
 public:
  /// The most slots one period may have: weights are quantised to shares of this.
  static constexpr int64_t kMaxPeriod = 1000;

  /// Where one sequence comes from.
  struct Pick {
    int source = 0;     ///< index into the weights
    int64_t index = 0;  ///< how many sequences of that source come before it (j)
  };

  /// `weights`: one per source, each >= 0, summing to more than 0. `keys` (optional,
  /// as many) name each weight in messages, e.g. "data.mix[1].weight". Throws DataError
  /// on a negative weight, an all-zero sum, or a positive weight too small for one slot.
  explicit MixSchedule(const std::vector<double>& weights,
                       const std::vector<std::string>& keys = {});

  /// Sequence n's source and running index j: p = n mod D picks the slot; j = (n / D) *
  /// d_k + (slots of source k before p in the period).
  Pick at(int64_t n) const;

  /// D: the slots of one period (the quantised weights' sum, divided by their gcd).
  int64_t period() const { return static_cast<int64_t>(slot_source_.size()); }
  /// d_k: source k's slots in one period; its share is d_k / D.
  const std::vector<int64_t>& slots() const { return slots_; }
  /// The period's sources in slot order.
  const std::vector<int>& layout() const { return slot_source_; }

 private:
  std::vector<int64_t> slots_;       // d_k
  std::vector<int> slot_source_;     // source of slot p
  std::vector<int64_t> slot_index_;  // slots of the same source before p
};

/// d_k: the weights as integers of the smallest sum D <= kMaxPeriod that holds them
/// exactly; when none does, by largest remainder to kMaxPeriod (ties to the lower index),
/// divided by their gcd. Exposed for the tests.
std::vector<int64_t> quantise_weights(const std::vector<double>& weights);

}  // namespace trident::data
