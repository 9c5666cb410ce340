// run_agreed: one all-gather of every rank's outcome ("" when it succeeded, "!" and the
// message when it failed), from which every rank draws the same conclusion.
#include "parallel/agreement.h"

#include <string>
#include <vector>

#include "parallel/communicator.h"  // Communicator::all_gather_bytes

namespace trident {

void run_agreed(Communicator& comm, const std::function<void()>& fn) {
  std::string outcome;
  try {
    fn();
  } catch (const std::exception& e) {
    outcome = std::string("!") + e.what();
  }
  const std::vector<std::string> outcomes = comm.all_gather_bytes(outcome);
  int first = -1, count = 0;
  for (int r = 0; r < static_cast<int>(outcomes.size()); ++r) {
    if (outcomes[r].empty()) continue;
    if (first < 0) first = r;
    ++count;
  }
  if (first < 0) return;
  std::string message = outcomes[first].substr(1);
  if (count < comm.size()) message = "rank " + std::to_string(first) + ": " + message;
  throw JobError(message);
}

}  // namespace trident
