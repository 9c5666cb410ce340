// TrainerProgress as JSON: windows as [first, last] pairs, samples as [step, loss, norm].
#include "checkpoint/trainer_progress.h"

#include <nlohmann/json.hpp>  // nlohmann::json

namespace trident {

void write_progress(const TrainerProgress& progress, nlohmann::json& trainer) {
  nlohmann::json windows = nlohmann::json::array(), history = nlohmann::json::array();
  for (const DataWindow& w : progress.skipped_data) windows.push_back({w.first, w.last});
  // Doubles are written in their shortest round-trip form: a resumed guard judges the
  // same numbers bit for bit.
  for (const GuardSample& s : progress.guard_history)
    history.push_back({s.step, s.loss, s.grad_norm});
  trainer["skipped_data"] = windows;
  trainer["guard"] = {
      {"good", progress.good}, {"last_skip", progress.guard_last_skip}, {"history", history}};
  if (!progress.router_bias.empty()) {
    nlohmann::json bias = nlohmann::json::object();
    for (const auto& [layer, b] : progress.router_bias) bias[std::to_string(layer)] = b;
    trainer["router_bias"] = bias;
  }
}

TrainerProgress read_progress(const nlohmann::json& trainer) {
  TrainerProgress progress;
  if (trainer.contains("skipped_data"))
    for (const auto& w : trainer.at("skipped_data"))
      progress.skipped_data.push_back({w.at(0).get<int64_t>(), w.at(1).get<int64_t>()});
  if (trainer.contains("guard")) {
    const nlohmann::json& guard = trainer.at("guard");
    progress.good = guard.value("good", true);
    progress.guard_last_skip = guard.value("last_skip", int64_t{0});
    for (const auto& s : guard.at("history"))
      progress.guard_history.push_back(
          {s.at(0).get<int64_t>(), s.at(1).get<double>(), s.at(2).get<double>()});
  }
  if (trainer.contains("router_bias"))
    for (const auto& [layer, b] : trainer.at("router_bias").items())
      progress.router_bias[std::stoll(layer)] = b.get<std::vector<double>>();
  return progress;
}

}  // namespace trident
