// Intra-op threads from the CPU sets of a node's ranks, and the warning about a binding that
// wastes cores.
#include "cli/threads.h"

#include <ATen/Parallel.h>  // at::set_num_threads
#include <sched.h>          // sched_getaffinity, CPU_ISSET

#include <algorithm>
#include <iostream>
#include <memory>
#include <sstream>
#include <thread>
#include <vector>

#include "parallel/communicator.h"  // all_gather_bytes
#include "parallel/world.h"         // node_communicator

namespace trident::cli {

namespace {

/// Whether two sets (cpu_set_text) hold a CPU in common.
bool overlap(const std::string& a, const std::string& b) {
  for (size_t i = 0; i < std::min(a.size(), b.size()); ++i)
    if (a[i] == '1' && b[i] == '1') return true;
  return false;
}

}  // namespace

std::string cpu_set_text() {
  cpu_set_t set;
  CPU_ZERO(&set);
  // Unknown affinity: every CPU the machine has (an unbound process).
  const int cpus = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  if (sched_getaffinity(0, sizeof(set), &set) != 0) return std::string(cpus, '1');
  std::string text;
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (!CPU_ISSET(cpu, &set)) continue;
    text.resize(static_cast<size_t>(cpu) + 1, '0');
    text.back() = '1';
  }
  return text.empty() ? std::string(cpus, '1') : text;
}

ThreadChoice choose_threads(int64_t configured, const std::vector<std::string>& sets, int me,
                            int node_cores) {
  ThreadChoice c;
  const std::string& mine = sets.at(static_cast<size_t>(me));
  c.cores = std::max(1, static_cast<int>(std::count(mine.begin(), mine.end(), '1')));
  c.node_cores = std::max(1, node_cores);
  c.local_ranks = std::max(1, static_cast<int>(sets.size()));
  c.sharing = 0;
  for (const std::string& other : sets) c.sharing += overlap(mine, other) ? 1 : 0;
  c.sharing = std::max(1, c.sharing);
  c.threads = configured > 0 ? static_cast<int>(configured) : std::max(1, c.cores / c.sharing);
  return c;
}

void apply_threads(int64_t configured, Communicator& job) {
  const std::unique_ptr<Communicator> node = node_communicator();
  const ThreadChoice c =
      choose_threads(configured, node->all_gather_bytes(cpu_set_text()), node->rank(),
                     static_cast<int>(std::max(1u, std::thread::hardware_concurrency())));
  at::set_num_threads(c.threads);
  std::ostringstream mine;
  mine << c.threads << " " << c.cores << " " << c.sharing;
  const std::vector<std::string> all = job.all_gather_bytes(mine.str());
  if (job.rank() != 0) return;
  int over = -1, narrow = -1;  // first rank with more threads than cores / a narrow binding
  for (size_t r = 0; r < all.size(); ++r) {
    int threads = 0, cores = 0, sharing = 1;
    std::istringstream(all[r]) >> threads >> cores >> sharing;
    if (over < 0 && threads > cores) over = static_cast<int>(r);
    // Unbound ranks in a restricted set share it: only a set of its own is a binding.
    if (narrow < 0 && sharing == 1 && cores < c.node_cores / c.local_ranks)
      narrow = static_cast<int>(r);
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
