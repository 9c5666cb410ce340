// The mapping from a TrainConfig to the model it describes: the one place where the
// trainer, evaluation, conversion and the tools learn which model to build and in what dtype.
#pragma once
#include <c10/core/Device.h>      // at::Device
#include <c10/core/ScalarType.h>  // at::ScalarType

#include <memory>  // std::unique_ptr

#include "config/config.h"       // TrainConfig, Precision
#include "models/gpt.h"          // GptOptions
#include "models/llama.h"        // LlamaOptions
#include "models/model_stage.h"  // ModelStage

namespace trident {

/// The libtorch dtype of a precision.
at::ScalarType precision_dtype(Precision precision);

/// The GPT a config describes, as training, evaluation and conversion build it.
GptOptions gpt_options(const TrainConfig& config);

/// Checks that this build and node can run on `device` (train.device), throwing an
/// InputError that names what is missing and the fix when not.
void check_device(Device device);

/// The device this rank trains on: the CPU, or for train.device = "cuda" GPU number
/// `local_rank` modulo the node's GPU count (`local_rank`: this rank's index among the
/// ranks of its node), after check_device. For CUDA it also makes libtorch choose its
/// deterministic kernels (index_add_, embedding backward, cuBLAS workspaces), so that a
/// run repeats its numbers; an operation with none warns.
at::Device run_device(Device device, int local_rank);

/// The Llama a config describes (model.arch = "llama").
LlamaOptions llama_options(const TrainConfig& config);

/// Pipeline stage `stage` of `stages` of the model family model.arch names, sharded over
/// the tp group `tp`. With parallel.virtual_stages = v > 1 the stage holds v chunks
/// (a ChunkedStage): chunk c is virtual stage c * stages + stage of stages * v.
/// `defer_init`: parameters without values (ParamRegistry::defer_init), for an optimizer
/// that draws each rank's shard of them itself (ZeRO stage 3). `ep`: the expert-parallel
/// group among which an MoE model's experts are shared out (parallel.ep), or null. `cp`:
/// the ranks splitting each sequence (parallel.cp), or null for whole sequences.
std::unique_ptr<ModelStage> make_model_stage(const TrainConfig& config, Communicator& tp, int stage,
                                             int stages, at::Device device = at::kCPU,
                                             bool defer_init = false, Communicator* ep = nullptr,
                                             Communicator* cp = nullptr);

}  // namespace trident
