// The rendezvous check as a simulation: each stage's messages on each channel in posting
// order; a message completes once its sender and its receiver have both posted it and
// reached it on that channel, and a channel goes on only past completed messages.
#include "pipeline/rendezvous_checker.h"

#include <algorithm>  // std::min, std::sort
#include <map>        // std::map
#include <utility>    // std::pair

namespace trident::pipeline {

namespace {

/// One message as its sender names it and its receiver expects it: activation or
/// gradient, micro-batch, and the virtual-stage boundary it crosses.
struct Message {
  bool activation = true;
  int micro_batch = 0;
  int boundary = 0;
  bool operator==(const Message& o) const {
    return activation == o.activation && micro_batch == o.micro_batch && boundary == o.boundary;
  }
};

std::string describe(const Message& m) {
  return std::string(m.activation ? "the activation" : "the gradient") + " of micro-batch " +
         std::to_string(m.micro_batch) + " across virtual-stage boundary " +
         std::to_string(m.boundary);
}

struct P2p {
  bool send = false;
  int stage = 0, peer = 0;
  Message message;
  size_t instruction = 0;
  std::pair<int, size_t> match{-1, 0};  // the peer's operation: (lane, index)
};

/// The lane (a stage's operations on one channel) of an operation of `stage` with `peer`.
int lane_of(int stage, int peer, bool send, bool activation, int stages, Channels channels) {
  switch (channels) {
    case Channels::kOne:
      return stage;
    case Channels::kPerKind:
      return 2 * stage + (activation ? 0 : 1);
    case Channels::kPerLink:
      break;
  }
  return ((stage * stages + peer) * 2 + (send ? 0 : 1)) * 2 + (activation ? 0 : 1);
}

}  // namespace

std::string check_rendezvous(const std::vector<Schedule>& per_stage, Channels channels) {
  const int stages = static_cast<int>(per_stage.size());
  if (stages < 2) return "";
  auto where = [&](const P2p& op) {
    return "stage " + std::to_string(op.stage) + ", instruction " + std::to_string(op.instruction) +
           " (" + to_string(per_stage[op.stage][op.instruction]) + ")";
  };
  const int lanes = channels == Channels::kOne       ? stages
                    : channels == Channels::kPerKind ? 2 * stages
                                                     : stages * stages * 4;
  std::vector<std::vector<P2p>> ops(lanes);
  for (int s = 0; s < stages; ++s) {
    const int next = (s + 1) % stages, prev = (s + stages - 1) % stages;
    for (size_t i = 0; i < per_stage[s].size(); ++i) {
      const Instruction& ins = per_stage[s][i];
      const int vstage = ins.chunk * stages + s;
      const int k = ins.micro_batch;
      P2p op{false, s, 0, {}, i};
      if (ins.op == Op::kSendActivation)
        op = {true, s, next, {true, k, vstage}, i};
      else if (ins.op == Op::kRecvActivation)
        op = {false, s, prev, {true, k, vstage - 1}, i};
      else if (ins.op == Op::kSendGrad)
        op = {true, s, prev, {false, k, vstage - 1}, i};
      else if (ins.op == Op::kRecvGrad)
        op = {false, s, next, {false, k, vstage}, i};
      else
        continue;
      ops[lane_of(s, op.peer, op.send, op.message.activation, stages, channels)].push_back(op);
    }
  }

  // Match by order on each channel: the n-th send from a to b meets the n-th receive at b
  // from a.
  std::map<std::pair<int, int>, std::vector<std::pair<int, size_t>>> sends, recvs;
  for (int l = 0; l < lanes; ++l)
    for (size_t i = 0; i < ops[l].size(); ++i) {
      const P2p& op = ops[l][i];
      const int peer_lane =
          lane_of(op.peer, op.stage, !op.send, op.message.activation, stages, channels);
      (op.send ? sends[{l, peer_lane}] : recvs[{peer_lane, l}]).push_back({l, i});
    }
  for (const auto& [pair, from] : sends) {
    const std::vector<std::pair<int, size_t>>& to = recvs[pair];
    for (size_t n = 0; n < std::min(from.size(), to.size()); ++n) {
      P2p& send = ops[from[n].first][from[n].second];
      P2p& recv = ops[to[n].first][to[n].second];
      if (!(send.message == recv.message))
        return where(recv) + " expects " + describe(recv.message) +
               ", but the messages from stage " + std::to_string(send.stage) +
               " are matched by order, and this receive meets " + describe(send.message) + " (" +
               where(send) + ")";
      send.match = to[n];
      recv.match = from[n];
    }
  }
  for (const std::vector<P2p>& lane : ops)
    for (const P2p& op : lane)
      if (op.match.first < 0)
        return where(op) + (op.send ? ": the receiving stage never takes this message"
                                    : ": no stage sends this message");

  // Run: each stage posts its operations in list order and waits for each receive right
  // after posting it (as PipelineRuntime does), so nothing after an incomplete receive is
  // posted yet. A message completes when both its operations are posted and at the head
  // of their lanes.
  std::vector<size_t> at(lanes, 0);  // per lane: its first incomplete operation
  std::vector<std::vector<std::pair<int, size_t>>> receives(stages);  // per stage, in order
  for (int l = 0; l < lanes; ++l)
    for (size_t i = 0; i < ops[l].size(); ++i)
      if (!ops[l][i].send) receives[ops[l][i].stage].push_back({l, i});
  for (auto& r : receives)
    std::sort(r.begin(), r.end(), [&](const auto& a, const auto& b) {
      return ops[a.first][a.second].instruction < ops[b.first][b.second].instruction;
    });
  std::vector<size_t> waiting(stages, 0);  // per stage: its first incomplete receive
  auto posted = [&](const P2p& op) {
    const auto& r = receives[op.stage];
    size_t& w = waiting[op.stage];
    while (w < r.size() && at[r[w].first] > r[w].second) ++w;
    return w >= r.size() || op.instruction <= ops[r[w].first][r[w].second].instruction;
  };
  for (bool moved = true; moved;) {
    moved = false;
    for (int l = 0; l < lanes; ++l) {
      while (at[l] < ops[l].size()) {
        const P2p& op = ops[l][at[l]];
        const auto [peer_lane, peer_index] = op.match;
        if (at[peer_lane] != peer_index || !posted(op) || !posted(ops[peer_lane][peer_index]))
          break;
        ++at[l];
        ++at[peer_lane];
        moved = true;
      }
    }
  }
  std::string stuck;
  for (int l = 0; l < lanes; ++l)
    if (at[l] < ops[l].size())
      stuck += (stuck.empty() ? "" : "; ") + where(ops[l][at[l]]) + " waits for stage " +
               std::to_string(ops[l][at[l]].peer);
  return stuck.empty() ? "" : "deadlock where a send waits for its receive (NCCL): " + stuck;
}

}  // namespace trident::pipeline
