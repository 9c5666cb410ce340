// The mixture schedule: the weights as whole slots of the shortest exact period (else
// thousandths by largest remainder), and nginx's smooth weighted round-robin over it.
#include "data/mix_schedule.h"

#include <algorithm>  // std::stable_sort
#include <cmath>      // std::floor, std::isfinite
#include <numeric>    // std::gcd

#include "data/data_error.h"  // DataError

namespace trident::data {
namespace {

std::string key_of(const std::vector<std::string>& keys, size_t k) {
  return k < keys.size() ? keys[k] : "weight " + std::to_string(k);
}

std::string format_weight(double w) {
  std::string text = std::to_string(w);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

}  // namespace

namespace {

/// Largest remainder: floor(w_k / sum * total), the spare units to the largest remainders
/// (the lower index on a tie). `exact` says whether no weight was rounded.
std::vector<int64_t> largest_remainder(const std::vector<double>& weights, double sum,
                                       int64_t total, bool& exact) {
  const size_t m = weights.size();
  std::vector<int64_t> d(m);
  std::vector<double> remainder(m);
  int64_t given = 0;
  exact = true;
  for (size_t k = 0; k < m; ++k) {
    const double units = weights[k] / sum * static_cast<double>(total);
    d[k] = static_cast<int64_t>(std::floor(units));
    remainder[k] = units - static_cast<double>(d[k]);
    // Within rounding of a whole unit either way counts as exact (0.7 * 10 is 6.999...).
    if (remainder[k] > 1e-9 * static_cast<double>(total) &&
        remainder[k] < 1 - 1e-9 * static_cast<double>(total))
      exact = false;
    given += d[k];
  }
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t r = 0; given < total && r < m; ++r, ++given) ++d[order[r]];
  return d;
}

}  // namespace

std::vector<int64_t> quantise_weights(const std::vector<double>& weights) {
  double sum = 0;
  for (const double w : weights) sum += w;
  // The shortest period that holds the weights exactly (1/1/1 is 1 slot each), else
  // thousandths.
  std::vector<int64_t> d;
  for (int64_t total = 1; total <= MixSchedule::kMaxPeriod; ++total) {
    bool exact = false;
    d = largest_remainder(weights, sum, total, exact);
    if (exact) break;
  }
  int64_t g = 0;
  for (const int64_t x : d) g = std::gcd(g, x);
  for (int64_t& x : d) x /= g;
  return d;
}

MixSchedule::MixSchedule(const std::vector<double>& weights, const std::vector<std::string>& keys) {
  if (weights.empty()) throw DataError("a data mixture needs at least one source");
  double sum = 0;
  for (size_t k = 0; k < weights.size(); ++k) {
    if (!std::isfinite(weights[k]) || weights[k] < 0)
      throw DataError(key_of(keys, k) + " = " + format_weight(weights[k]) +
                      " is negative; a source's weight must be >= 0");
    sum += weights[k];
  }
  if (!(sum > 0))
    throw DataError(
        "the weights of the data mixture sum to 0; give at least one source a "
        "positive weight");
  slots_ = quantise_weights(weights);
  for (size_t k = 0; k < weights.size(); ++k)
    if (weights[k] > 0 && slots_[k] == 0)
      throw DataError(key_of(keys, k) + " = " + format_weight(weights[k]) +
                      " is too small: a mixture gives each source whole thousandths of the "
                      "sequences, and this share of the weights' sum rounds to none; raise it "
                      "or set it to 0");
  // Smooth weighted round-robin: every slot adds each source's weight to its credit and
  // the source with the most credit (the lower index on a tie) takes the slot, paying D.
  int64_t period = 0;
  for (const int64_t d : slots_) period += d;
  std::vector<int64_t> credit(slots_.size(), 0), taken(slots_.size(), 0);
  for (int64_t p = 0; p < period; ++p) {
    size_t best = 0;
    for (size_t k = 0; k < slots_.size(); ++k) {
      credit[k] += slots_[k];
      if (credit[k] > credit[best]) best = k;
    }
    credit[best] -= period;
    slot_source_.push_back(static_cast<int>(best));
    slot_index_.push_back(taken[best]++);
  }
}

MixSchedule::Pick MixSchedule::at(int64_t n) const {
  if (n < 0) throw DataError("MixSchedule::at: sequence " + std::to_string(n) + " is negative");
  const int64_t period = this->period();
  const size_t p = static_cast<size_t>(n % period);
  const int source = slot_source_[p];
  return {source, (n / period) * slots_[static_cast<size_t>(source)] + slot_index_[p]};
}

}  // namespace trident::data
