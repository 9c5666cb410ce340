// Ending a job on every rank with one message: a step that may fail on some ranks runs
// inside run_agreed, and then either all ranks go on or all throw the same JobError.
#pragma once
#include <functional>
#include <stdexcept>
#include <string>

namespace trident {

class Communicator;

/// An error known to every rank of the job; rank 0 reports it and all exit non-zero:
/// with code 2 when it carries an InputError (bad input), else 1.
class JobError : public std::runtime_error {
 public:
  explicit JobError(const std::string& message, bool input_error = false)
      : std::runtime_error(message), input_error_(input_error) {}

  /// Whether the failing rank's exception was an InputError.
  bool input_error() const { return input_error_; }

 private:
  bool input_error_;
};

/// Runs `fn` on every rank of `comm`. If it throws on any rank, every rank throws a
/// JobError carrying the lowest failing rank's message (prefixed with that rank when the
/// failure was not on every rank) and whether it was an InputError. Collective over `comm`.
void run_agreed(Communicator& comm, const std::function<void()>& fn);

}  // namespace trident
