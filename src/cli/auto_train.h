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

/// The config overrides of the configuration chosen for `job`'s ranks (the same on every
/// rank), after the command line's own --set; rank 0 prints the choice. Throws an error
/// every rank agrees on when nothing fits, naming the smallest change that would.
/// Collective over `job`.
std::vector<std::string> auto_overrides(const Args& args, Communicator& job);

}  // namespace trident::cli
