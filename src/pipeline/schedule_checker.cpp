// The schedule checker: a simulation of all stages that executes instructions in list
// order, matches sends with receives over FIFO channels and reports the first fault.
#include "pipeline/schedule_checker.h"

#include <algorithm>  // std::max
#include <deque>      // std::deque
#include <stdexcept>  // std::invalid_argument, std::runtime_error
#include <string>     // std::string, std::to_string
#include <vector>     // std::vector

namespace trident::pipeline {
namespace {

// A posted send waiting in its channel for the receive that takes it.
struct Message {
  int micro_batch;
  int chunk;         // the sender's chunk
  int sender_index;  // instruction index in the sender's list
  double time;       // when it was posted
};

// What happened to one micro-batch of one chunk on one stage, so far.
struct Progress {
  bool activation_received = false;
  bool forwarded = false;
  bool activation_sent = false;
  bool grad_received = false;
  bool input_grad_done = false;  // B, or BI: the gradient for the previous stage exists
  bool backwarded = false;       // B, or W: the weight gradient is accumulated too
  bool grad_sent = false;
};

struct StageState {
  size_t pc = 0;       // next instruction
  double clock = 0.0;  // when the stage is free
  int in_flight = 0;
  bool reduced = false;
  bool stepped = false;
  std::vector<Progress> progress;  // (chunk * micro_batches + micro_batch)
};

enum class Kind { kActivation = 0, kGrad = 1 };

// A fault in the schedules; caught by check_schedules and turned into the report.
struct Fault : std::runtime_error {
  using std::runtime_error::runtime_error;
};

class Simulator {
 public:
  Simulator(const std::vector<Schedule>& per_stage, int micro_batches, double forward_cost,
            double backward_cost)
      : lists_(per_stage),
        stages_(static_cast<int>(per_stage.size())),
        micro_batches_(micro_batches),
        forward_cost_(forward_cost),
        backward_cost_(backward_cost),
        chunks_(count_chunks(per_stage)),
        state_(per_stage.size()),
        channels_(2 * per_stage.size() * per_stage.size()) {
    for (StageState& s : state_) s.progress.resize(chunks_ * micro_batches_);
    report_.max_in_flight.assign(stages_, 0);
    report_.timeline.resize(stages_);
  }

  CheckReport run() {
    try {
      simulate();
      finish();
      report_.ok = true;
    } catch (const Fault& fault) {
      report_.ok = false;
      report_.error = fault.what();
    }
    return report_;
  }

 private:
  static int count_chunks(const std::vector<Schedule>& per_stage) {
    int chunks = 1;
    for (const Schedule& list : per_stage) {
      for (const Instruction& in : list) chunks = std::max(chunks, in.chunk + 1);
    }
    return chunks;
  }

  // ---- where messages go: chunk c of stage s is virtual stage c * stages + s ----
  bool is_first(int stage, int chunk) const { return stage == 0 && chunk == 0; }
  bool is_last(int stage, int chunk) const { return stage == stages_ - 1 && chunk == chunks_ - 1; }
  int next_stage(int stage) const { return (stage + 1) % stages_; }
  int prev_stage(int stage) const { return (stage + stages_ - 1) % stages_; }
  int next_chunk(int stage, int chunk) const { return chunk + (stage == stages_ - 1 ? 1 : 0); }
  int prev_chunk(int stage, int chunk) const { return chunk - (stage == 0 ? 1 : 0); }

  std::deque<Message>& channel(int from, int to, Kind kind) {
    return channels_[(from * stages_ + to) * 2 + static_cast<int>(kind)];
  }

  std::string where(int stage, size_t index) const {
    return "stage " + std::to_string(stage) + ", instruction " + std::to_string(index) + " (" +
           to_string(lists_[stage][index]) + ")";
  }
  [[noreturn]] void fail(int stage, const std::string& why) const {
    throw Fault(where(stage, state_[stage].pc) + ": " + why);
  }
  static std::string mb_text(int micro_batch, int chunk) {
    std::string text = "micro-batch " + std::to_string(micro_batch);
    if (chunk != 0) text += " of chunk " + std::to_string(chunk);
    return text;
  }

  Progress& progress_of(int stage, const Instruction& in) {
    return state_[stage].progress[in.chunk * micro_batches_ + in.micro_batch];
  }

  // ---- the simulation ----
  void simulate() {
    while (true) {
      bool advanced = false;
      bool all_done = true;
      for (int s = 0; s < stages_; ++s) {
        while (state_[s].pc < lists_[s].size() && step(s)) advanced = true;
        if (state_[s].pc < lists_[s].size()) all_done = false;
      }
      if (all_done) return;
      if (!advanced) report_stuck();
    }
  }

  // Executes stage s's next instruction; false when it is a receive that must wait.
  bool step(int s) {
    StageState& st = state_[s];
    const Instruction& in = lists_[s][st.pc];
    if (in.chunk < 0) fail(s, "a chunk cannot be negative");
    const bool needs_mb = in.op != Op::kReduceGrads && in.op != Op::kOptimizerStep;
    if (needs_mb && (in.micro_batch < 0 || in.micro_batch >= micro_batches_)) {
      fail(s, "micro-batch " + std::to_string(in.micro_batch) + " is out of range for " +
                  std::to_string(micro_batches_) + " micro-batches");
    }
    switch (in.op) {
      case Op::kRecvActivation:
        return receive(s, in, Kind::kActivation);
      case Op::kRecvGrad:
        return receive(s, in, Kind::kGrad);
      case Op::kForward:
        forward(s, in);
        break;
      case Op::kBackward:
      case Op::kBackwardInput:
        backward(s, in);
        break;
      case Op::kBackwardWeight:
        backward_weight(s, in);
        break;
      case Op::kSendActivation:
        send(s, in, Kind::kActivation);
        break;
      case Op::kSendGrad:
        send(s, in, Kind::kGrad);
        break;
      case Op::kReduceGrads:
        reduce_grads(s);
        break;
      case Op::kOptimizerStep:
        if (!st.reduced) fail(s, "the optimizer steps before ReduceGrads");
        if (st.stepped) fail(s, "the optimizer steps twice");
        st.stepped = true;
        break;
    }
    ++st.pc;
    return true;
  }

  bool receive(int s, const Instruction& in, Kind kind) {
    const bool act = kind == Kind::kActivation;
    if (act && is_first(s, in.chunk)) {
      fail(s, "the first stage has no previous stage to receive activations from");
    }
    if (!act && is_last(s, in.chunk)) {
      fail(s, "the last stage has no next stage to receive gradients from");
    }
    const int peer = act ? prev_stage(s) : next_stage(s);
    const int peer_chunk = act ? prev_chunk(s, in.chunk) : next_chunk(s, in.chunk);
    Progress& p = progress_of(s, in);
    bool& received = act ? p.activation_received : p.grad_received;
    if (received)
      fail(s, "receives the " + std::string(act ? "activation" : "gradient") + " of " +
                  mb_text(in.micro_batch, in.chunk) + " twice");
    std::deque<Message>& queue = channel(peer, s, kind);
    if (queue.empty()) return false;  // blocks until the peer posts its send
    const Message head = queue.front();
    if (head.micro_batch != in.micro_batch || head.chunk != peer_chunk) {
      const Instruction expected{act ? Op::kSendActivation : Op::kSendGrad, in.micro_batch,
                                 peer_chunk};
      const std::string peer_name = "stage " + std::to_string(peer);
      fail(s, std::string("the next ") + (act ? "activation" : "gradient") + " from " + peer_name +
                  " is " + where(peer, head.sender_index) + ", not " + to_string(expected) +
                  " (channels are FIFO); " + peer_name +
                  (sends_later(peer, expected, 0) ? " sends it out of order" : " never sends it"));
    }
    queue.pop_front();
    received = true;
    state_[s].clock = std::max(state_[s].clock, head.time);
    ++state_[s].pc;
    return true;
  }

  void send(int s, const Instruction& in, Kind kind) {
    const bool act = kind == Kind::kActivation;
    if (act && is_last(s, in.chunk)) {
      fail(s, "the last stage has no next stage to send activations to");
    }
    if (!act && is_first(s, in.chunk)) {
      fail(s, "the first stage has no previous stage to send gradients to");
    }
    Progress& p = progress_of(s, in);
    if (act && !p.forwarded)
      fail(s,
           "sends the activation of " + mb_text(in.micro_batch, in.chunk) + " before its forward");
    if (!act && !p.input_grad_done)
      fail(s,
           "sends the gradient of " + mb_text(in.micro_batch, in.chunk) + " before its backward");
    bool& sent = act ? p.activation_sent : p.grad_sent;
    if (sent)
      fail(s, "sends the " + std::string(act ? "activation" : "gradient") + " of " +
                  mb_text(in.micro_batch, in.chunk) + " twice");
    sent = true;
    const int peer = act ? next_stage(s) : prev_stage(s);
    channel(s, peer, kind)
        .push_back({in.micro_batch, in.chunk, static_cast<int>(state_[s].pc), state_[s].clock});
  }

  void forward(int s, const Instruction& in) {
    Progress& p = progress_of(s, in);
    const std::string what = mb_text(in.micro_batch, in.chunk);
    if (p.forwarded) fail(s, what + " is forwarded twice");
    if (!is_first(s, in.chunk) && !p.activation_received) {
      fail(s, "forwards " + what + " before receiving its activation");
    }
    p.forwarded = true;
    compute(s, forward_cost_);
    StageState& st = state_[s];
    ++st.in_flight;
    report_.max_in_flight[s] = std::max(report_.max_in_flight[s], st.in_flight);
  }

  // A whole backward (B) or its input-gradient half (BI).
  void backward(int s, const Instruction& in) {
    Progress& p = progress_of(s, in);
    const std::string what = mb_text(in.micro_batch, in.chunk);
    if (p.input_grad_done) fail(s, what + " is backwarded twice");
    if (!p.forwarded) fail(s, what + " is backwarded before it is forwarded");
    if (!is_last(s, in.chunk) && !p.grad_received) {
      fail(s, "backwards " + what + " before receiving its gradient");
    }
    p.input_grad_done = true;
    if (in.op == Op::kBackwardInput) {
      // The other half of the backward cost comes with W; the activations stay until then.
      compute(s, backward_cost_ / 2);
      return;
    }
    p.backwarded = true;
    compute(s, backward_cost_);
    --state_[s].in_flight;
  }

  // The weight-gradient half (W): after the micro-batch's BI, once.
  void backward_weight(int s, const Instruction& in) {
    Progress& p = progress_of(s, in);
    const std::string what = mb_text(in.micro_batch, in.chunk);
    if (p.backwarded) fail(s, "the weight gradient of " + what + " is computed twice");
    if (!p.input_grad_done) {
      fail(s, "computes the weight gradient of " + what + " before its input gradient (BI)");
    }
    p.backwarded = true;
    compute(s, backward_cost_ / 2);
    --state_[s].in_flight;
  }

  void compute(int s, double cost) {
    StageState& st = state_[s];
    report_.timeline[s].push_back({st.clock, st.clock + cost});
    st.clock += cost;
    report_.makespan = std::max(report_.makespan, st.clock);
    busy_ += cost;
  }

  void reduce_grads(int s) {
    StageState& st = state_[s];
    if (st.reduced) fail(s, "gradients are reduced twice");
    const int missing = first_missing(s, /*backward=*/true);
    if (missing >= 0) {
      fail(s, mb_text(missing % micro_batches_, missing / micro_batches_) +
                  " is never backwarded before gradients are reduced");
    }
    st.reduced = true;
  }

  // First (chunk * micro_batches + micro_batch) not yet forwarded/backwarded; -1 if none.
  int first_missing(int s, bool backward) const {
    const std::vector<Progress>& all = state_[s].progress;
    for (size_t k = 0; k < all.size(); ++k) {
      if (!(backward ? all[k].backwarded : all[k].forwarded)) return static_cast<int>(k);
    }
    return -1;
  }

  // Whether `peer`'s list holds the send `expected` at or after instruction `from_pc`.
  bool sends_later(int peer, const Instruction& expected, size_t from_pc) const {
    for (size_t k = from_pc; k < lists_[peer].size(); ++k) {
      if (lists_[peer][k] == expected) return true;
    }
    return false;
  }

  // No stage can advance and some are unfinished: every unfinished stage waits at a
  // receive. A receive whose send is not left in the peer's list is a root cause;
  // otherwise the waits form a cycle, which is named first.
  [[noreturn]] void report_stuck() const {
    std::vector<int> waits_on(stages_, -1);  // the peer each stuck stage waits for
    std::vector<std::string> lines(stages_);
    std::string roots;
    std::string stuck_list;
    for (int s = 0; s < stages_; ++s) {
      const StageState& st = state_[s];
      if (st.pc >= lists_[s].size()) continue;
      const Instruction& in = lists_[s][st.pc];
      const bool act = in.op == Op::kRecvActivation;
      const int peer = act ? prev_stage(s) : next_stage(s);
      const Instruction expected{act ? Op::kSendActivation : Op::kSendGrad, in.micro_batch,
                                 act ? prev_chunk(s, in.chunk) : next_chunk(s, in.chunk)};
      const std::string peer_name = "stage " + std::to_string(peer);
      lines[s] = where(s, st.pc) + " waits for " + to_string(expected) + " from " + peer_name;
      stuck_list += (stuck_list.empty() ? "" : ", ") + std::to_string(s);
      waits_on[s] = peer;
      if (!sends_later(peer, expected, state_[peer].pc)) {
        const bool finished = state_[peer].pc >= lists_[peer].size();
        roots += (roots.empty() ? "" : "; ") + lines[s] + ", which " + peer_name +
                 (finished ? " finished without sending" : " never sends");
        lines[s].clear();
      }
    }
    const auto join_others = [&](const std::vector<bool>& skip) {
      std::string text;
      for (int s = 0; s < stages_; ++s) {
        if (!skip[s] && !lines[s].empty()) text += (text.empty() ? "" : "; ") + lines[s];
      }
      return text;
    };
    if (!roots.empty()) {
      const std::string others = join_others(std::vector<bool>(stages_, false));
      throw Fault("unmatched receive: " + roots +
                  (others.empty() ? "" : "; also stuck: " + others) +
                  " (stuck stages: " + stuck_list + ")");
    }
    // Each stuck stage waits on exactly one stuck peer, so walking the waits from any
    // stuck stage ends in a cycle.
    int s = 0;
    while (waits_on[s] < 0) ++s;
    std::vector<bool> seen(stages_, false);
    while (!seen[s]) {
      seen[s] = true;
      s = waits_on[s];
    }
    std::vector<bool> in_cycle(stages_, false);
    for (int t = s; !in_cycle[t]; t = waits_on[t]) in_cycle[t] = true;
    std::string cycle_stages;
    std::string cycle_lines;
    for (int t = 0; t < stages_; ++t) {
      if (!in_cycle[t]) continue;
      cycle_stages += (cycle_stages.empty() ? "" : ", ") + std::to_string(t);
      cycle_lines += (cycle_lines.empty() ? "" : "; ") + lines[t];
    }
    const std::string others = join_others(in_cycle);
    throw Fault("deadlock: stages " + cycle_stages + " wait on each other: " + cycle_lines +
                (others.empty() ? "" : "; stuck behind them: " + others) +
                " (stuck stages: " + stuck_list + ")");
  }

  // Every stage ran to its end: check completeness and that no send is left over.
  void finish() {
    for (int s = 0; s < stages_; ++s) {
      const std::string end = "stage " + std::to_string(s) + " (end of its " +
                              std::to_string(lists_[s].size()) + " instructions): ";
      for (bool backward : {false, true}) {
        const int k = first_missing(s, backward);
        if (k >= 0) {
          throw Fault(end + mb_text(k % micro_batches_, k / micro_batches_) + " is never " +
                      (backward ? "backwarded" : "forwarded"));
        }
      }
      if (!state_[s].reduced) throw Fault(end + "gradients are never reduced (no RED)");
      if (!state_[s].stepped) throw Fault(end + "the optimizer never steps (no OPT)");
    }
    for (int from = 0; from < stages_; ++from) {
      for (int to = 0; to < stages_; ++to) {
        for (Kind kind : {Kind::kActivation, Kind::kGrad}) {
          const std::deque<Message>& queue =
              channels_[(from * stages_ + to) * 2 + static_cast<int>(kind)];
          if (!queue.empty()) {
            throw Fault("unmatched send: " + where(from, queue.front().sender_index) +
                        " is never received by stage " + std::to_string(to));
          }
        }
      }
    }
    const double total = stages_ * report_.makespan;
    report_.bubble_fraction = total > 0.0 ? (total - busy_) / total : 0.0;
  }

  const std::vector<Schedule>& lists_;
  const int stages_;
  const int micro_batches_;
  const double forward_cost_;
  const double backward_cost_;
  const int chunks_;
  std::vector<StageState> state_;
  std::vector<std::deque<Message>> channels_;  // (from * stages + to) * 2 + kind
  double busy_ = 0.0;
  CheckReport report_;
};

}  // namespace

double bubble_formula(int stages, int micro_batches) {
  return static_cast<double>(stages - 1) / static_cast<double>(micro_batches + stages - 1);
}

double interleaved_bubble_formula(int stages, int micro_batches, int chunks) {
  return static_cast<double>(stages - 1) / static_cast<double>(chunks * micro_batches + stages - 1);
}

double zb_h1_bubble_formula(int stages, int micro_batches, double forward_cost,
                            double backward_cost) {
  const double f = forward_cost, b = backward_cost / 2, w = backward_cost / 2;
  const double idle = (stages - 1) * (f + b - w);
  return idle / (micro_batches * (f + b + w) + idle);
}

double schedule_bubble_formula(PipelineSchedule kind, int stages, int micro_batches, int chunks,
                               double forward_cost, double backward_cost) {
  switch (kind) {
    case PipelineSchedule::kInterleaved1F1B:
      return interleaved_bubble_formula(stages, micro_batches, chunks);
    case PipelineSchedule::kZbH1:
      return zb_h1_bubble_formula(stages, micro_batches, forward_cost, backward_cost);
    case PipelineSchedule::kGpipe:
    case PipelineSchedule::kOneFOneB:
      break;
  }
  return bubble_formula(stages, micro_batches);
}

CheckReport check_schedules(const std::vector<Schedule>& per_stage, int micro_batches,
                            double forward_cost, double backward_cost) {
  if (per_stage.empty()) {
    throw std::invalid_argument("check_schedules: no stages given (need one schedule per stage)");
  }
  if (micro_batches < 1) {
    throw std::invalid_argument(
        "check_schedules: the number of micro-batches must be at least 1, got " +
        std::to_string(micro_batches));
  }
  if (!(forward_cost > 0.0) || !(backward_cost > 0.0)) {
    throw std::invalid_argument(
        "check_schedules: forward and backward costs must be positive, got " +
        std::to_string(forward_cost) + " and " + std::to_string(backward_cost));
  }
  return Simulator(per_stage, micro_batches, forward_cost, backward_cost).run();
}

}  // namespace trident::pipeline
