// world.h in a build without MPI: the job is this process alone.
#include "parallel/local_communicator.h"  // LocalCommunicator
#include "parallel/world.h"

namespace trident {

int world_rank() { return 0; }
int world_size() { return 1; }
bool multi_process_built() { return false; }
void start_job(int* /*argc*/, char*** /*argv*/) {}
void end_job() {}
int ranks_per_node() { return 1; }
int local_rank() { return 0; }
void abort_job(int /*code*/) {}

std::unique_ptr<Communicator> world_communicator(double /*timeout_s*/) {
  return std::make_unique<LocalCommunicator>("world", 0);
}

std::unique_ptr<Communicator> self_communicator(double /*timeout_s*/) {
  return std::make_unique<LocalCommunicator>("self", 0);
}

std::unique_ptr<Communicator> node_communicator(double /*timeout_s*/) {
  return std::make_unique<LocalCommunicator>("node", 0);
}

}  // namespace trident
