// `trident train --auto`: rank 0 chooses the layout, ZeRO stage, offload, micro-batch and
// recomputation for this job and machine, and every rank trains with the same choice.
#pragma once
#include <string>  // std::string
#include <vector>  // std::vector

#include "cli/args.h"  // Args

namespace trident {
class Communicator;
}

namespace trident::cli {

/// Whether the run chooses its configuration: --auto, or parallel.auto = true in the config
/// (read on every rank; a bad config ends every rank alike). Collective over `job`.
bool auto_requested(const Args& args, Communicator& job);

/// The config overrides of the configuration chosen for `job`'s ranks (the same on every
/// rank): the command line's own --set, then the choice's keys and parallel.auto = false.
/// Rank 0 prints the choice. With --measure K, the planner's K best are trained for a few
/// steps each and the fastest measured is chosen. Throws an error every rank agrees on
/// when nothing fits, naming the smallest change that would. Collective over `job`.
std::vector<std::string> auto_overrides(const Args& args, Communicator& job);

}  // namespace trident::cli
