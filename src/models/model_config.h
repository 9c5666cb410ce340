// The mapping from a TrainConfig to the model it describes: the one place where the
// trainer, evaluation, conversion and the tools learn which GPT to build and in what dtype.
#pragma once
#include <c10/core/ScalarType.h>  // at::ScalarType

#include "config/config.h"  // TrainConfig, Precision
#include "models/gpt.h"     // GptOptions

namespace trident {

/// The libtorch dtype of a precision.
at::ScalarType precision_dtype(Precision precision);

/// The GPT a config describes, as training, evaluation and conversion build it.
GptOptions gpt_options(const TrainConfig& config);

/// Checks that this build and node can run on `device` (train.device), throwing an
/// InputError that names what is missing and the fix when not.
void check_device(Device device);

}  // namespace trident
