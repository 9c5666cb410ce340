// The one exception type of the data module: a bad data source, reported before
// training with a message that names the file and the fix.
#pragma once

#include "config/input_error.h"  // InputError

namespace trident::data {

/// A data source that cannot be used (missing, corrupt, too short, wrong vocabulary).
class DataError : public InputError {
 public:
  using InputError::InputError;
};

}  // namespace trident::data
