// How many intra-op threads a rank uses: the cores of its CPU set (what mpirun's binding,
// a container or a scheduler left it), shared with the ranks of its node that run on the
// same cores, unless the config says.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trident {
class Communicator;
}

namespace trident::cli {

/// One rank's choice: `threads` intra-op threads on the `cores` of its CPU set, which
/// `sharing` ranks of the node's `local_ranks` (itself included) also run on, of the
/// node's `node_cores`.
struct ThreadChoice {
  int threads = 1;
  int cores = 1;
  int node_cores = 1;
  int local_ranks = 1;
  int sharing = 1;
};

/// This process's CPU set as text: character i is '1' when it may run on CPU i.
std::string cpu_set_text();

/// The choice of rank `me` of a node whose ranks run on the CPU sets `sets` (cpu_set_text
/// of each), on `node_cores` cores, for `configured` threads (0: automatic = the cores of
/// its set divided among the ranks whose sets overlap it, at least 1). Ranks bound to cores
/// of their own share nothing; unbound ranks in a restricted set (a container, a Slurm job
/// without binding) share that set, not the node.
ThreadChoice choose_threads(int64_t configured, const std::vector<std::string>& sets, int me,
                            int node_cores);

/// Sets the intra-op thread count to every rank's choice; rank 0 prints one line ("threads:
/// 2 per rank on 2 cores"), and a warning naming `mpirun --bind-to none` when some rank has
/// more threads than cores in its set or was bound to fewer cores than its share of the
/// node. Collective over `job`.
void apply_threads(int64_t configured, Communicator& job);

}  // namespace trident::cli
