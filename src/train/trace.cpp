// Trace events from the runtime's instruction records, gathered over the context's world
// group to its rank 0.
#include "train/trace.h"

#include <cstdio>
#include <nlohmann/json.hpp>  // nlohmann::json
#include <stdexcept>

#include "parallel/parallel_context.h"

namespace trident {

namespace {

using pipeline::Op;

const char* category_of(Op op) {
  switch (op) {
    case Op::kForward:
      return "forward";
    case Op::kBackward:
      return "backward";
    case Op::kBackwardInput:
      return "backward-input";
    case Op::kBackwardWeight:
      return "backward-weight";
    case Op::kRecvActivation:
    case Op::kRecvGrad:
      return "recv";
    case Op::kSendActivation:
    case Op::kSendGrad:
      return "send";
    case Op::kReduceGrads:
      return "reduce";
    case Op::kOptimizerStep:
      return "optimizer";
  }
  return "other";
}

std::string name_of(const InstructionRecord& r) {
  const int c = r.instruction.chunk;
  const std::string k =
      std::to_string(r.instruction.micro_batch) + (c != 0 ? " chunk " + std::to_string(c) : "");
  switch (r.instruction.op) {
    case Op::kForward:
      return "forward " + k;
    case Op::kBackward:
      return (r.recompute ? "recompute+backward " : "backward ") + k;
    case Op::kBackwardInput:
      return (r.recompute ? "recompute+backward input " : "backward input ") + k;
    case Op::kBackwardWeight:
      return "backward weight " + k;
    case Op::kRecvActivation:
      return "recv activation " + k;
    case Op::kRecvGrad:
      return "recv grad " + k;
    case Op::kSendActivation:
      return "send activation " + k;
    case Op::kSendGrad:
      return "send grad " + k;
    case Op::kReduceGrads:
      return "reduce grads";
    case Op::kOptimizerStep:
      return "optimizer step";
  }
  return "?";
}

}  // namespace

void TraceRecorder::add(int64_t step, const StepResult& result) {
  for (const auto& r : result.records) {
    const double d = r.end - r.start;
    const Op op = r.instruction.op;
    // An MoE layer's all-to-alls run inside the compute instructions: communication.
    if (pipeline::is_compute(op) || op == Op::kOptimizerStep) split_.compute += d - r.all_to_all_s;
    split_.communication += r.all_to_all_s;
    if (op == Op::kRecvActivation || op == Op::kRecvGrad || op == Op::kReduceGrads)
      split_.communication += d;
    if (step <= max_steps_)
      events_.push_back({name_of(r), category_of(op), result.start_s + r.start, d, step,
                         r.instruction.micro_batch, r.all_to_all_s});
  }
  if (!result.records.empty()) split_.wall += result.records.back().end;
}

std::string TraceRecorder::events_json(int rank) const {
  nlohmann::json events = nlohmann::json::array();
  for (const auto& e : events_) {
    nlohmann::json args = {{"step", e.step}, {"micro_batch", e.micro_batch}};
    if (e.all_to_all_s > 0) args["all_to_all_ms"] = e.all_to_all_s * 1e3;
    events.push_back({{"name", e.name},
                      {"cat", e.category},
                      {"ph", "X"},
                      {"ts", e.start_s * 1e6},
                      {"dur", e.duration_s * 1e6},
                      {"pid", rank},
                      {"tid", 0},
                      {"args", args}});
    // The instruction's all-to-all time as a slice of its own on a second row, at the
    // instruction's end: its total, not where within the instruction each exchange fell.
    if (e.all_to_all_s > 0)
      events.push_back({{"name", "all-to-all (ep), total"},
                        {"cat", "all-to-all"},
                        {"ph", "X"},
                        {"ts", (e.start_s + e.duration_s - e.all_to_all_s) * 1e6},
                        {"dur", e.all_to_all_s * 1e6},
                        {"pid", rank},
                        {"tid", 1},
                        {"args", {{"step", e.step}, {"micro_batch", e.micro_batch}}}});
  }
  return events.dump();
}

void TraceRecorder::write(const std::string& path, ParallelContext& ctx) const {
  Communicator& world = ctx.world();
  const int rank = world.rank();
  const int size = world.size();
  const std::vector<std::string> all = world.gather_bytes(events_json(rank), 0);
  if (rank != 0) return;

  nlohmann::json trace;
  trace["displayTimeUnit"] = "ms";
  nlohmann::json events = nlohmann::json::array();
  double origin = -1;
  std::vector<nlohmann::json> per_rank;
  for (int r = 0; r < size; ++r) {
    per_rank.push_back(nlohmann::json::parse(all[r]));
    for (const auto& e : per_rank.back())
      origin = origin < 0 ? e["ts"].get<double>() : std::min(origin, e["ts"].get<double>());
  }
  for (int r = 0; r < size; ++r) {
    const GridCoord c = ctx.grid().coord_of(r);
    const std::string label = "rank " + std::to_string(r) + " (pp " + std::to_string(c.pp) +
                              " dp " + std::to_string(c.dp) + " tp " + std::to_string(c.tp) + ")";
    events.push_back(
        {{"name", "process_name"}, {"ph", "M"}, {"pid", r}, {"args", {{"name", label}}}});
    events.push_back({{"name", "process_sort_index"},
                      {"ph", "M"},
                      {"pid", r},
                      {"args", {{"sort_index", c.pp * size + r}}}});
    for (auto e : per_rank[r]) {
      e["ts"] = e["ts"].get<double>() - origin;
      events.push_back(e);
    }
  }
  trace["traceEvents"] = events;
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (!f) throw std::runtime_error("cannot write the trace file " + path);
  const std::string text = trace.dump();
  std::fwrite(text.data(), 1, text.size(), f);
  std::fclose(f);
}

}  // namespace trident
