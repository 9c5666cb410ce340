// The Chrome trace-event file of a run (opens in Perfetto or chrome://tracing): one
// process per rank, one slice per executed pipeline instruction, so that the schedule's
// pattern and its bubbles can be seen; with expert parallelism, a second row per rank
// with the time each instruction spent in the experts' all-to-alls.
#pragma once
#include <string>
#include <vector>

#include "pipeline/runtime.h"

namespace trident {
class ParallelContext;

/// Where a rank's time went over the recorded steps, in seconds.
struct TimeSplit {
  double wall = 0.0;           // from each step's start to its last instruction's end
  double compute = 0.0;        // forward, backward (with recompute) and the optimizer step,
                               // less the experts' all-to-alls inside them
  double communication = 0.0;  // waiting on receives, on the gradient reduction and in the
                               // experts' all-to-alls
  double bubble() const { return wall - compute - communication; }
};

class TraceRecorder {
 public:
  /// Keeps the records of the first `max_steps` steps (all of them for the time split).
  explicit TraceRecorder(int max_steps = 20) : max_steps_(max_steps) {}

  void add(int64_t step, const StepResult& result);
  const TimeSplit& split() const { return split_; }

  /// Gathers the events of every rank of `ctx` to its rank 0, which writes `path`
  /// (collective over ctx.world(), whichever ranks of the job it holds).
  void write(const std::string& path, ParallelContext& ctx) const;
  /// This rank's events as JSON objects (for tests).
  std::string events_json(int rank) const;

 private:
  struct Event {
    std::string name;
    std::string category;
    double start_s;
    double duration_s;
    int64_t step;
    int micro_batch;
    double all_to_all_s;  // inside the ep group's all-to-alls
  };
  int max_steps_;
  std::vector<Event> events_;
  TimeSplit split_;
};

}  // namespace trident
