// `trident train --auto --measure K`: trains each of the planner's K best configurations
// for a few steps on the job's own ranks and keeps the fastest measured.
#pragma once
#include <string>  // std::string
#include <vector>  // std::vector

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

/// Steps each candidate trains in a pass: the first warms up, the rest count.
inline constexpr int kMeasureSteps = 4;

/// Passes over the candidates, in alternating order (1..K, then K..1): a candidate's place
/// in the process's sequence does not favour it. Trained first in one pass, the predicted
/// best ran 3-11 points further above its separate launches' median than the runner-up
/// (docs/planner.md, the nineteenth run).
inline constexpr int kMeasurePasses = 2;

/// Trains each candidate from `config_path` for kMeasureSteps steps in each of
/// kMeasurePasses passes (no checkpoint, no metrics, no trace: nothing of the run is
/// written; the host memory each freed given back before the next), and fills measured_s
/// with the median of rank 0's counted steps over the passes; returns the index of the
/// fastest. Rank 0 prints a line per candidate.
/// Collective over `job`; the same index on every rank.
size_t measure_fastest(const std::string& config_path, std::vector<MeasuredCandidate>& candidates,
                       Communicator& job);

}  // namespace trident::cli
