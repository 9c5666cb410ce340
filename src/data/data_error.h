// The one exception type of the data module: a bad data source, reported before
// training with a message that names the file and the fix.
#pragma once

#include <stdexcept>  // std::runtime_error

namespace trident::data {

/// A data source that cannot be used (missing, corrupt, too short, wrong vocabulary).
class DataError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

}  // namespace trident::data
