// run_agreed: one all-gather of every rank's outcome ("" when it succeeded, else its kind
// and message), from which every rank draws the same conclusion.
#include "parallel/agreement.h"

#include <string>
#include <vector>

#include "config/input_error.h"     // InputError
#include "parallel/communicator.h"  // Communicator::all_gather_bytes

namespace trident {

void run_agreed(Communicator& comm, const std::function<void()>& fn) {
  // Each rank's outcome travels as one string: empty when fn returned, else a kind
  // ('I' for bad input, 'E' for anything else) followed by the message.
  std::string outcome;
  try {
    fn();
  } catch (const InputError& e) {
    outcome = std::string("I") + e.what();
  } catch (const JobError& e) {  // from a nested run_agreed: keep its kind
    outcome = (e.input_error() ? "I" : "E") + std::string(e.what());
  } catch (const std::exception& e) {
    outcome = std::string("E") + e.what();
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
  throw JobError(message, outcomes[first][0] == 'I');
}

}  // namespace trident
