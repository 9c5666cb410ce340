// JSONL metrics and the console progress line.
#include "train/metrics_log.h"

#include <algorithm>  // std::min, std::max
#include <cerrno>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>  // nlohmann::json
#include <stdexcept>

namespace trident {

MetricsLog::MetricsLog(const std::string& path, int64_t resumed_after) {
  if (path.empty()) return;
  // Resumed: appended, never rewritten, so that no moment of the run can lose the history.
  file_ = std::fopen(path.c_str(), resumed_after >= 0 ? "a" : "w");
  if (!file_)
    throw std::runtime_error("cannot write the metrics file " + path + ": " + std::strerror(errno) +
                             " (set logging.metrics to a writable path)");
}

MetricsLog::~MetricsLog() {
  if (file_) std::fclose(file_);
}

void MetricsLog::write(const StepMetrics& m) {
  if (!file_) return;
  nlohmann::json j = {{"step", m.step},
                      {"loss", m.loss},
                      {"lr", m.lr},
                      {"grad_norm", m.grad_norm},
                      {"tokens_per_s", m.tokens_per_s},
                      {"step_time_s", m.step_time_s},
                      {"tflops", m.tflops},
                      {"skipped", m.skipped},
                      {"wait_s",
                       {{"dp", m.dp_wait_s},
                        {"tp", m.tp_wait_s},
                        {"pp", m.pp_wait_s},
                        {"ep", m.ep_wait_s},
                        {"cp", m.cp_wait_s},
                        {"inter_node", m.inter_node_wait_s},
                        {"intra_node", m.intra_node_wait_s}}},
                      {"peak_rss_bytes", m.peak_rss_bytes},
                      {"peak_tensor_bytes", m.peak_tensor_bytes}};
  j["data_batch"] = m.data_batch;
  if (m.spike) j["spike"] = m.spike_reason;
  if (!m.guard_warning.empty()) j["guard_warning"] = m.guard_warning;
  if (m.sources.size() > 1) {
    nlohmann::json tokens = nlohmann::json::object(), epochs = nlohmann::json::object();
    for (size_t k = 0; k < m.sources.size(); ++k) {
      tokens[m.sources[k]] = m.tokens_by_source[k];
      epochs[m.sources[k]] = m.epochs_by_source[k];
    }
    j["tokens_by_source"] = tokens;
    j["epoch_by_source"] = epochs;
  } else if (!m.epochs_by_source.empty() && m.epochs_by_source[0] > 0) {
    j["epoch"] = m.epochs_by_source[0];
  }
  if (m.validation) {
    j["val_loss"] = m.validation->loss;
    j["eval_s"] = m.validation->seconds;
    j["val_tokens"] = m.validation->tokens;
    if (m.eval_sources.size() > 1) {
      nlohmann::json by_source = nlohmann::json::object();
      for (size_t s = 0; s < m.eval_sources.size(); ++s)
        by_source[m.eval_sources[s]] = m.validation->loss_by_source[s];
      j["val_loss_by_source"] = by_source;
    }
  }
  if (m.rollback)
    j["rollback"] = {{"to_step", m.rollback->to_step},
                     {"checkpoint", m.rollback->checkpoint},
                     {"left_out", {m.rollback->left_out.first, m.rollback->left_out.last}}};
  if (!m.moe_load.empty()) {
    nlohmann::json load = nlohmann::json::array();
    for (const auto& l : m.moe_load) load.push_back({l.layer, l.min, l.max});
    j["moe"] = {{"aux_loss", m.moe_aux_loss}, {"dropped", m.moe_dropped}, {"load", load}};
  }
  if (m.tier_bytes > 0)
    j["tier"] = {{"wait_s", m.tier_wait_s}, {"stream_s", m.tier_stream_s}, {"bytes", m.tier_bytes}};
  const std::string line = j.dump() + "\n";
  std::fwrite(line.data(), 1, line.size(), file_);
  std::fflush(file_);
}

std::string format_duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char buf[32];
  if (s >= 3600)
    std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", s / 3600, (s / 60) % 60, s % 60);
  else
    std::snprintf(buf, sizeof buf, "%ld:%02ld", s / 60, s % 60);
  return buf;
}

std::string progress_line(const StepMetrics& m, int64_t total_steps, double elapsed_s,
                          std::optional<double> loss_floor) {
  const double left = m.step > 0 ? elapsed_s / static_cast<double>(m.step) *
                                       static_cast<double>(total_steps - m.step)
                                 : 0.0;
  char buf[256];
  std::snprintf(
      buf, sizeof buf,
      "step %lld/%lld | loss %.4f%s | lr %.2e | grad %.3f | %.0f tok/s | %.3f TFLOP/s "
      "| %s elapsed, %s left",
      static_cast<long long>(m.step), static_cast<long long>(total_steps), m.loss,
      loss_floor ? (" (floor " + std::to_string(*loss_floor).substr(0, 6) + ")").c_str() : "", m.lr,
      m.grad_norm, m.tokens_per_s, m.tflops, format_duration(elapsed_s).c_str(),
      format_duration(left).c_str());
  std::string line = buf;
  if (!m.moe_load.empty()) {
    // The fewest and most choices an expert of any MoE layer received in the step.
    int64_t lo = m.moe_load.front().min, hi = m.moe_load.front().max;
    for (const StepMetrics::MoeLoad& l : m.moe_load) {
      lo = std::min(lo, l.min);
      hi = std::max(hi, l.max);
    }
    line += " | expert load " + std::to_string(lo) + ".." + std::to_string(hi);
  }
  for (size_t k = 0; k < m.epochs_by_source.size(); ++k) {
    if (m.epochs_by_source[k] <= 0) continue;  // synthetic data, or windows drawn at random
    const bool named = m.sources.size() > 1;
    char epoch[128];
    std::snprintf(epoch, sizeof epoch, " | %s%sepoch %.2f", named ? m.sources[k].c_str() : "",
                  named ? " " : "", m.epochs_by_source[k]);
    line += epoch;
  }
  if (m.validation) {
    char val[96];
    std::snprintf(val, sizeof val, " | val %.4f (%.1f s)", m.validation->loss,
                  m.validation->seconds);
    line += val;
  }
  if (!m.guard_warning.empty()) line += " | guard warning: " + m.guard_warning;
  if (!m.skipped) return line;
  return line + " | update skipped: " +
         (m.spike ? "spike (" + m.spike_reason + ")" : "non-finite loss or gradient") + ", " +
         std::to_string(m.skipped_in_a_row) + " in a row";
}

}  // namespace trident
