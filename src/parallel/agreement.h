// Ending a job on every rank with one message: a step that may fail on some ranks runs
// inside run_agreed, and then either all ranks go on or all throw the same JobError.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>

namespace trident {

class Communicator;

/// An error known to every rank of the job; rank 0 reports it and all exit non-zero.
class JobError : public std::runtime_error {
 public:
  explicit JobError(const std::string& message) : std::runtime_error(message) {}
};

/// Runs `fn` on every rank of `comm`. If it throws on any rank, every rank throws a
/// JobError carrying the lowest failing rank's message (prefixed with that rank when the
/// failure was not on every rank). Collective over `comm`.
void run_agreed(Communicator& comm, const std::function<void()>& fn);

}  // namespace trident
