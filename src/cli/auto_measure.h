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
  double measured_s = 0;  ///< filled in: the median step after the first
};

/// Steps each candidate trains: the first warms up, the median of the rest counts.
inline constexpr int kMeasureSteps = 4;

/// Trains each candidate from `config_path` for kMeasureSteps steps (no checkpoint, no
/// metrics, no trace: nothing of the run is written) and fills measured_s with rank 0's
/// median step; returns the index of the fastest. Rank 0 prints a line per candidate.
/// Collective over `job`; the same index on every rank.
size_t measure_fastest(const std::string& config_path, std::vector<MeasuredCandidate>& candidates,
                       Communicator& job);

}  // namespace trident::cli
