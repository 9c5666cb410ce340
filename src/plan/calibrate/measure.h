// One round of calibration: every measurement of compute and links, with every rank of
// the job measuring at once, as the cluster description the planner reads.
#pragma once
#include <functional>  // std::function
#include <string>      // std::string
#include <vector>      // std::vector

#include "plan/cluster.h"  // plan::Cluster

namespace trident {
class Communicator;
}  // namespace trident

namespace trident::calibrate {

/// Receives each measurement as a line of text, for printing and the file's comments.
using Say = std::function<void(const std::string&)>;

/// One round of every measurement over the ranks of `world`, each node (host name) of
/// `cores` cores — or, when every node is the same machine (emulated nodes), `cores`
/// shared by all; `say` receives a line per figure. Collective over `world`.
/// The disk under `disk_dir` is measured too (every rank at once, each its own file), for
/// the nvme offload tier; an empty `disk_dir` skips it. `budget` scales the time each
/// figure is measured for: 1 is the full calibration, --quick's 0.2 a rougher one.
plan::Cluster measure_once(Communicator& world, int cores, const Say& say,
                           const std::string& disk_dir, double budget);

/// The rounds' median, figure by figure: the typical machine, as the step times the
/// planner is compared with are medians. The process base is the rounds' smallest measured:
/// only a fresh process measures it.
plan::Cluster median_of(const std::vector<plan::Cluster>& rounds);

}  // namespace trident::calibrate
