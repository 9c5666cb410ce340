// The names of the config's choices: the one table each enum is parsed from and printed by.
#include "config/choices.h"

#include <ostream>

namespace trident {

template <>
const std::vector<ChoiceName<ModelArch>>& choice_names() {
  static const std::vector<ChoiceName<ModelArch>> names = {{ModelArch::kGpt2, "gpt2"},
                                                           {ModelArch::kLlama, "llama"}};
  return names;
}

template <>
const std::vector<ChoiceName<Precision>>& choice_names() {
  static const std::vector<ChoiceName<Precision>> names = {
      {Precision::kFp64, "fp64"}, {Precision::kFp32, "fp32"}, {Precision::kBf16, "bf16"}};
  return names;
}

template <>
const std::vector<ChoiceName<PipelineSchedule>>& choice_names() {
  static const std::vector<ChoiceName<PipelineSchedule>> names = {
      {PipelineSchedule::kGpipe, "gpipe"},
      {PipelineSchedule::kOneFOneB, "1f1b"},
      {PipelineSchedule::kInterleaved1F1B, "interleaved-1f1b"},
      {PipelineSchedule::kZbH1, "zb-h1"}};
  return names;
}

template <>
const std::vector<ChoiceName<ActivationCheckpointing>>& choice_names() {
  static const std::vector<ChoiceName<ActivationCheckpointing>> names = {
      {ActivationCheckpointing::kNone, "none"},
      {ActivationCheckpointing::kSelective, "selective"},
      {ActivationCheckpointing::kFull, "full"}};
  return names;
}

template <>
const std::vector<ChoiceName<ReduceDtype>>& choice_names() {
  static const std::vector<ChoiceName<ReduceDtype>> names = {{ReduceDtype::kFp32, "fp32"},
                                                             {ReduceDtype::kBf16, "bf16"}};
  return names;
}

template <>
const std::vector<ChoiceName<Device>>& choice_names() {
  static const std::vector<ChoiceName<Device>> names = {{Device::kCpu, "cpu"},
                                                        {Device::kCuda, "cuda"}};
  return names;
}

template <>
const std::vector<ChoiceName<Toggle>>& choice_names() {
  static const std::vector<ChoiceName<Toggle>> names = {{Toggle::kOn, "on"}, {Toggle::kOff, "off"}};
  return names;
}

std::ostream& operator<<(std::ostream& out, Toggle value) { return out << name_of(value); }

template <>
const std::vector<ChoiceName<OffloadTier>>& choice_names() {
  static const std::vector<ChoiceName<OffloadTier>> names = {{OffloadTier::kNone, "none"},
                                                             {OffloadTier::kNvme, "nvme"}};
  return names;
}

std::ostream& operator<<(std::ostream& out, OffloadTier value) { return out << name_of(value); }

template <>
const std::vector<ChoiceName<DataOrder>>& choice_names() {
  static const std::vector<ChoiceName<DataOrder>> names = {{DataOrder::kEpochs, "epochs"},
                                                           {DataOrder::kWindows, "windows"}};
  return names;
}

std::ostream& operator<<(std::ostream& out, DataOrder value) { return out << name_of(value); }

template <>
const std::vector<ChoiceName<PreemptSignals>>& choice_names() {
  static const std::vector<ChoiceName<PreemptSignals>> names = {
      {PreemptSignals::kTermIntUsr1, "SIGTERM,SIGINT,SIGUSR1"},
      {PreemptSignals::kUsr1, "SIGUSR1"},
      {PreemptSignals::kNone, "none"}};
  return names;
}

template <>
const std::vector<ChoiceName<Allocator>>& choice_names() {
  static const std::vector<ChoiceName<Allocator>> names = {
      {Allocator::kAuto, "auto"}, {Allocator::kCache, "cache"}, {Allocator::kRelease, "release"}};
  return names;
}

template <>
const std::vector<ChoiceName<MoeRouter>>& choice_names() {
  static const std::vector<ChoiceName<MoeRouter>> names = {{MoeRouter::kSoftmax, "softmax"},
                                                           {MoeRouter::kSigmoid, "sigmoid"}};
  return names;
}

template <>
const std::vector<ChoiceName<LrScheduleKind>>& choice_names() {
  static const std::vector<ChoiceName<LrScheduleKind>> names = {
      {LrScheduleKind::kCosine, "cosine"},
      {LrScheduleKind::kLinear, "linear"},
      {LrScheduleKind::kWsd, "wsd"},
      {LrScheduleKind::kConstant, "constant"},
      {LrScheduleKind::kInverseSqrt, "inverse_sqrt"}};
  return names;
}

template <>
const std::vector<ChoiceName<DecayShape>>& choice_names() {
  static const std::vector<ChoiceName<DecayShape>> names = {{DecayShape::kLinear, "linear"},
                                                            {DecayShape::kCosine, "cosine"},
                                                            {DecayShape::kOneMinusSqrt, "1-sqrt"}};
  return names;
}

template <>
const std::vector<ChoiceName<OptimizerName>>& choice_names() {
  static const std::vector<ChoiceName<OptimizerName>> names = {{OptimizerName::kAdamW, "adamw"},
                                                               {OptimizerName::kMuon, "muon"}};
  return names;
}

template <>
const std::vector<ChoiceName<MuonScale>>& choice_names() {
  static const std::vector<ChoiceName<MuonScale>> names = {{MuonScale::kMoonlight, "moonlight"},
                                                           {MuonScale::kSpectral, "spectral"}};
  return names;
}

std::ostream& operator<<(std::ostream& out, ModelArch value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, Precision value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, PipelineSchedule value) {
  return out << name_of(value);
}
std::ostream& operator<<(std::ostream& out, ActivationCheckpointing value) {
  return out << name_of(value);
}
std::ostream& operator<<(std::ostream& out, ReduceDtype value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, Device value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, PreemptSignals value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, Allocator value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, MoeRouter value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, LrScheduleKind value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, DecayShape value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, OptimizerName value) { return out << name_of(value); }
std::ostream& operator<<(std::ostream& out, MuonScale value) { return out << name_of(value); }

}  // namespace trident
