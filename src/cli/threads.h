// How many intra-op threads a rank uses: the cores its CPU affinity allows (what mpirun's
// binding left it), shared with the other ranks of its node, unless the config says.
#pragma once
#include <cstdint>
#include <string>

namespace trident {
class Communicator;
}

namespace trident::cli {

/// One rank's choice: `threads` intra-op threads on the `cores` its affinity allows, of
/// the node's `node_cores`, shared by `local_ranks` ranks.
struct ThreadChoice {
  int threads = 1;
  int cores = 1;
  int node_cores = 1;
  int local_ranks = 1;
};

/// The choice for `configured` threads (0: automatic = the allowed cores divided among the
/// node's ranks that share them, at least 1).
ThreadChoice choose_threads(int64_t configured, int local_ranks);

/// Sets the intra-op thread count to every rank's choice; rank 0 prints one line ("threads:
/// 2 per rank on 2 cores"), and a warning naming `mpirun --bind-to none` when some rank has
/// more threads than allowed cores or was bound to fewer cores than its share of the node.
/// Collective over `job`.
void apply_threads(int64_t configured, Communicator& job);

}  // namespace trident::cli
