// The closed sets of values that some config keys take, as enums with their names. A name
// is parsed once, when the config is read; the code compares enums, never strings.
#pragma once
#include <iosfwd>    // std::ostream
#include <optional>  // std::optional
#include <string>    // std::string
#include <vector>    // std::vector

namespace trident {

/// model.arch
enum class ModelArch { kGpt2, kLlama };
/// train.precision: the dtype of parameters and activations.
enum class Precision { kFp64, kFp32, kBf16 };
/// parallel.schedule
enum class PipelineSchedule { kGpipe, kOneFOneB, kInterleaved1F1B, kZbH1 };
/// parallel.activation_checkpointing: keep everything; recompute only attention's core
/// (scores, softmax, weighted sum of the values) in backward; recompute each stage's forward.
enum class ActivationCheckpointing { kNone, kSelective, kFull };
/// parallel.grad_reduce_dtype: the dtype gradients travel in between dp ranks.
enum class ReduceDtype { kFp32, kBf16 };
/// train.device: where tensors live and kernels run.
enum class Device { kCpu, kCuda };
/// A feature switched on or off (parallel.zero3_prefetch, ...).
enum class Toggle { kOn, kOff };
/// parallel.offload_optimizer / offload_params: where ZeRO's shards live between uses. There
/// is no "cpu" tier (see the schema's refusal): nothing would run it.
enum class OffloadTier { kNone, kNvme };
/// data.order: a token file's non-overlapping windows once each per epoch, in a fresh
/// permutation each epoch; or windows at any offset drawn with replacement.
enum class DataOrder { kEpochs, kWindows };

/// model.moe_router: how an MoE layer scores its experts. kSoftmax: softmax, top k,
/// renormalised (Mixtral); kSigmoid: sigmoid scores, top k of score + a per-expert bias that
/// balances the load without a loss (DeepSeek-V3), weights the chosen scores renormalised.
enum class MoeRouter { kSoftmax, kSigmoid };

/// train.allocator: what happens to a rank's freed host memory. kCache keeps it for reuse
/// (the fastest; peak RSS includes the heap's fragmentation); kRelease maps every block of
/// 1 MiB or more on its own, with transparent huge pages, and returns it when freed (peak
/// RSS follows live memory); kAuto releases when the nvme tier holds state.
enum class Allocator { kAuto, kCache, kRelease };

/// checkpoint.preempt_signals: the signals that make every rank save and exit at the next
/// step boundary ("none": they keep their default action, ending the job unsaved).
enum class PreemptSignals { kTermIntUsr1, kUsr1, kNone };

/// optimizer.schedule: the learning rate's shape after the linear warm-up
/// (train/lr_schedule.h).
enum class LrScheduleKind { kCosine, kLinear, kWsd, kConstant, kInverseSqrt };
/// optimizer.decay_shape: how WSD's final decay falls from lr to min_lr.
enum class DecayShape { kLinear, kCosine, kOneMinusSqrt };
/// optimizer.name: AdamW for every parameter, or Muon for the blocks' matrices and AdamW for
/// the rest (zero/muon.h).
enum class OptimizerName { kAdamW, kMuon };
/// optimizer.muon_scale: how an orthogonalised update is scaled to a matrix's shape.
enum class MuonScale { kMoonlight, kSpectral };

/// One value of a choice and its name in config files ("1f1b").
template <typename E>
struct ChoiceName {
  E value;
  const char* name;
};

/// Every value of E with its name, in the order messages and docs list them.
template <typename E>
const std::vector<ChoiceName<E>>& choice_names();

/// The config name of `value`.
template <typename E>
const char* name_of(E value) {
  for (const ChoiceName<E>& c : choice_names<E>())
    if (c.value == value) return c.name;
  return "?";
}

/// The value named `name`, or nothing when no value has that name.
template <typename E>
std::optional<E> parse_choice(const std::string& name) {
  for (const ChoiceName<E>& c : choice_names<E>())
    if (name == c.name) return c.value;
  return std::nullopt;
}

/// Streams print a choice by its config name.
std::ostream& operator<<(std::ostream& out, ModelArch value);
std::ostream& operator<<(std::ostream& out, Precision value);
std::ostream& operator<<(std::ostream& out, PipelineSchedule value);
std::ostream& operator<<(std::ostream& out, ActivationCheckpointing value);
std::ostream& operator<<(std::ostream& out, ReduceDtype value);
std::ostream& operator<<(std::ostream& out, Device value);
std::ostream& operator<<(std::ostream& out, Toggle value);
std::ostream& operator<<(std::ostream& out, OffloadTier value);
std::ostream& operator<<(std::ostream& out, DataOrder value);
std::ostream& operator<<(std::ostream& out, PreemptSignals value);
std::ostream& operator<<(std::ostream& out, Allocator value);
std::ostream& operator<<(std::ostream& out, MoeRouter value);
std::ostream& operator<<(std::ostream& out, LrScheduleKind value);
std::ostream& operator<<(std::ostream& out, DecayShape value);
std::ostream& operator<<(std::ostream& out, OptimizerName value);
std::ostream& operator<<(std::ostream& out, MuonScale value);

}  // namespace trident
