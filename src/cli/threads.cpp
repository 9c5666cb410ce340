// Intra-op threads from the CPU affinity, and the warning about a binding that wastes cores.
#include "cli/threads.h"

#include <ATen/Parallel.h>  // at::set_num_threads
#include <sched.h>          // sched_getaffinity, CPU_COUNT

#include <algorithm>
#include <iostream>
#include <sstream>
#include <thread>
#include <vector>

#include "parallel/communicator.h"  // all_gather_bytes
#include "parallel/world.h"         // ranks_per_node

namespace trident::cli {

namespace {

/// The cores this process may run on (Open MPI binds a rank to one core when it launches
/// two ranks or fewer, unless told `--bind-to none`).
int allowed_cores() {
  cpu_set_t set;
  CPU_ZERO(&set);
  if (sched_getaffinity(0, sizeof(set), &set) == 0) return std::max(1, CPU_COUNT(&set));
  return static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

}  // namespace

ThreadChoice choose_threads(int64_t configured, int local_ranks) {
  ThreadChoice c;
  c.cores = allowed_cores();
  c.node_cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  c.local_ranks = std::max(1, local_ranks);
  // Unbound ranks share the allowed cores; a rank bound to its own cores uses them all.
  const int share = c.cores >= c.node_cores ? c.cores / c.local_ranks : c.cores;
  c.threads = configured > 0 ? static_cast<int>(configured) : std::max(1, share);
  return c;
}

void apply_threads(int64_t configured, Communicator& job) {
  const ThreadChoice c = choose_threads(configured, ranks_per_node());
  at::set_num_threads(c.threads);
  std::ostringstream mine;
  mine << c.threads << " " << c.cores;
  const std::vector<std::string> all = job.all_gather_bytes(mine.str());
  if (job.rank() != 0) return;
  int over = -1, narrow = -1;  // first rank with more threads than cores / a narrow binding
  for (size_t r = 0; r < all.size(); ++r) {
    int threads = 0, cores = 0;
    std::istringstream(all[r]) >> threads >> cores;
    if (over < 0 && threads > cores) over = static_cast<int>(r);
    if (narrow < 0 && cores < c.node_cores / c.local_ranks) narrow = static_cast<int>(r);
  }
  std::cout << "threads: " << c.threads << " intra-op per rank on " << c.cores << " of "
            << c.node_cores << " cores (rank 0's CPU affinity), " << c.local_ranks
            << " ranks on this node\n";
  if (over >= 0)
    std::cout << "warning: rank " << over << " runs " << all[over].substr(0, all[over].find(' '))
              << " threads on fewer cores; mpirun binds ranks to cores by default: launch with "
                 "`mpirun --bind-to none` (or set train.threads lower)\n";
  else if (narrow >= 0)
    std::cout << "warning: rank " << narrow << " is bound to fewer cores than its share of the "
              << c.node_cores
              << " cores here, which stay idle; launch with "
                 "`mpirun --bind-to none`\n";
  std::cout << std::flush;
}

}  // namespace trident::cli
