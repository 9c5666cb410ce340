// The base of every error that means "the input is wrong, not the program": a bad command
// line, config, data file, checkpoint or cluster file. The program exits with code 2.
#pragma once

#include <stdexcept>  // std::runtime_error

namespace trident {

/// Bad input the user can fix; what() is the one message shown. Torch-free and in the
/// bottom layer so that every layer can derive its own error type from it.
class InputError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trident
