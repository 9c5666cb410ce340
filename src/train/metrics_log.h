// What a run reports: one JSON object per logged step in the metrics file (JSONL), and a
// readable progress line for the console.
#pragma once
#include <cstdio>
#include <optional>
#include <string>

#include "train/trainer.h"

namespace trident {

/// Appends one JSON line per logged step; a no-op when constructed with an empty path.
class MetricsLog {
 public:
  /// A fresh run (`resumed_after` < 0) starts the file empty. A run resumed after step N
  /// appends to it and never rewrites it: the steps an interrupted run logged after its
  /// checkpoint appear again after their first records, and a reader takes the last record
  /// of each step (as after a rollback of the loss-spike guard).
  explicit MetricsLog(const std::string& path, int64_t resumed_after = -1);
  ~MetricsLog();
  MetricsLog(const MetricsLog&) = delete;
  MetricsLog& operator=(const MetricsLog&) = delete;

  void write(const StepMetrics& m);

 private:
  std::FILE* file_ = nullptr;
};

/// "step 10/200 | loss 3.2101 | lr 1.00e-03 | grad 0.512 | 12,345 tok/s | 0.012 TFLOP/s |
/// 0:05 elapsed, 1:35 left"; an MoE model's adds "| expert load 450..597", the fewest and
/// most choices an expert of any MoE layer received in the step. Plain text: no control
/// characters.
std::string progress_line(const StepMetrics& m, int64_t total_steps, double elapsed_s,
                          std::optional<double> loss_floor);

/// "1:05" or "1:02:03".
std::string format_duration(double seconds);

}  // namespace trident
