// `trident train --auto --measure K`: trains each of the planner's K best configurations
// for a few steps on the job's own ranks and keeps the fastest measured.
#pragma once
#include <cstddef>  // size_t
#include <string>   // std::string
#include <vector>   // std::vector

namespace trident {
class Communicator;
}

namespace trident::cli {

/// One configuration to time: its config overrides and the planner's predicted step.
struct MeasuredCandidate {
  std::string name;
  std::vector<std::string> sets;  ///< every --set of the run, the choice's keys last
  double predicted_s = 0;
  double measured_s = 0;  ///< filled in: the median of the counted steps
};

/// Steps each candidate trains in a pass, and of them the first that warm up and do not
/// count: two, as in bench/autotune.py's grid. The first trainer of a process ran its second
/// and third steps 25% and 17% slower than its fourth (0.893 and 0.834 s against 0.713 s on
/// a 4-rank Llama), the later ones their second 4-10% slower than their third.
inline constexpr int kMeasureSteps = 5;
inline constexpr int kMeasureWarmup = 2;

/// Passes over the candidates, in alternating order (1..K, then K..1), so that none is
/// always trained first: trained first in one pass, the predicted best ran 3-11 points
/// further above its separate launches' median than the runner-up (bench/results/autotune.md,
/// the nineteenth run). The passes did not end the position's effect: in the twentieth run the
/// runner-up's timing came further above than the best's in 7 of 8 cases.
inline constexpr int kMeasurePasses = 2;

/// The order measure_fastest trains `k` candidates in: indices 0..k-1, then k-1..0, and so
/// on for kMeasurePasses passes.
std::vector<size_t> measure_order(size_t k);

/// Trains each candidate from `config_path` for kMeasureSteps steps in each of
/// kMeasurePasses passes (no checkpoint, no metrics, no trace: nothing of the run is
/// written; the host memory each freed given back before the next), and fills measured_s
/// with the median of rank 0's counted steps over the passes; returns the index of the
/// fastest. Rank 0 prints a line per candidate.
/// Collective over `job`; the same index on every rank.
size_t measure_fastest(const std::string& config_path, std::vector<MeasuredCandidate>& candidates,
                       Communicator& job);

}  // namespace trident::cli
