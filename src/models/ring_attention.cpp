// Ring attention's forward and backward, one autograd function.
#include "models/ring_attention.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>  // torch::autograd::Function

#include <cmath>
#include <limits>
#include <vector>

#include "models/context_split.h"
#include "parallel/communicator.h"

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// The part of the score matrix one ring step computes. With the balanced cut, rank r
/// holding chunks (r, 2cp-1-r) meets the keys of rank j holding (j, 2cp-1-j):
/// - j == r: every query against every key, under the causal mask of the positions;
/// - j < r: every query against chunk j alone (all earlier; chunk 2cp-1-j is all later);
/// - j > r: the later chunk 2cp-1-r alone against both chunks (all earlier; chunk r sees
///   neither).
/// Every rank thus computes one masked block and cp - 1 half blocks: the same work.
struct Block {
  int64_t q_first, q_len, kv_first, kv_len;
  bool masked;
};

Block block_of(int rank, int source, int64_t n) {
  const int64_t half = n / 2;
  if (source == rank) return {0, n, 0, n, true};
  if (source < rank) return {0, n, 0, half, false};
  return {half, half, 0, n, false};
}

/// `x` (B, Hkv, n, d) repeated for the `group` query heads that read each kv head.
at::Tensor expand_heads(const at::Tensor& x, int64_t group) {
  return group > 1 ? x.repeat_interleave(group, 1) : x;
}

/// The sum over each kv head's `group` query heads of a (B, H, n, d) gradient.
at::Tensor sum_heads(const at::Tensor& g, int64_t group) {
  if (group == 1) return g;
  return g.view({g.size(0), g.size(1) / group, group, g.size(2), g.size(3)}).sum(2);
}

/// The ring's neighbours and the transfer of one buffer to the next rank.
struct Ring {
  Communicator& comm;
  int rank, size;
  int next() const { return (rank + 1) % size; }
  int prev() const { return (rank + size - 1) % size; }
  /// Posts `out` to the next rank and a receive from the previous into a new buffer.
  std::vector<WorkHandle> pass(const at::Tensor& out, at::Tensor& in, int tag) {
    in = at::empty_like(out);
    return {comm.send(out, next(), tag), comm.recv(in, prev(), tag)};
  }
  static void wait(std::vector<WorkHandle>& work) {
    for (auto& w : work) w->wait();
    work.clear();
  }
};

/// The mask of the diagonal block: key position after query position.
at::Tensor future_mask(int64_t n, int rank, int cp, at::Device device) {
  const at::Tensor pos = context_positions(n * cp, rank, cp, device);
  return pos.unsqueeze(0).gt(pos.unsqueeze(1));  // (n, n): [query, key]
}

constexpr int kKvTag = 0, kGradTag = 1;

/// One ring step's operands: the block's rows of q, the block's columns of the keys and
/// values in hand (repeated to the query heads), and their scaled, masked scores.
struct BlockOperands {
  at::Tensor qs, ks, vs, scores;
};

BlockOperands block_operands(const at::Tensor& q, const at::Tensor& kv, const Block& b,
                             int64_t group, double scale, const at::Tensor& mask) {
  BlockOperands o;
  o.qs = q.narrow(2, b.q_first, b.q_len);
  o.ks = expand_heads(kv[0].narrow(2, b.kv_first, b.kv_len), group);
  o.vs = expand_heads(kv[1].narrow(2, b.kv_first, b.kv_len), group);
  o.scores = at::matmul(o.qs, o.ks.transpose(-2, -1)) * scale;
  if (b.masked) o.scores = o.scores.masked_fill(mask, -std::numeric_limits<double>::infinity());
  return o;
}

struct RingAttention : torch::autograd::Function<RingAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v, Communicator* comm) {
    Ring ring{*comm, comm->rank(), comm->size()};
    const int64_t n = q.size(2), d = q.size(3), group = q.size(1) / k.size(1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    const at::Tensor mask = future_mask(n, ring.rank, ring.size, q.device());
    at::Tensor kv = at::stack({k, v}).contiguous();  // what travels: (2, B, Hkv, n, d)
    at::Tensor out, lse;
    for (int s = 0; s < ring.size; ++s) {
      at::Tensor kv_next;
      std::vector<WorkHandle> work;
      if (s + 1 < ring.size) work = ring.pass(kv, kv_next, kKvTag);
      const Block b = block_of(ring.rank, (ring.rank - s + ring.size) % ring.size, n);
      const BlockOperands o = block_operands(q, kv, b, group, scale, mask);
      const at::Tensor block_lse = at::logsumexp(o.scores, -1);  // (B, H, rows)
      const at::Tensor block_out = at::matmul(at::exp(o.scores - block_lse.unsqueeze(-1)), o.vs);
      if (s == 0) {  // the diagonal block: every query sees at least itself
        out = block_out;
        lse = block_lse;
      } else {  // the log-sum-exp merge of the rows this block covers
        at::Tensor rows_out = out.narrow(2, b.q_first, b.q_len);
        at::Tensor rows_lse = lse.narrow(2, b.q_first, b.q_len);
        const at::Tensor merged = at::logaddexp(rows_lse, block_lse);
        rows_out.copy_(rows_out * at::exp(rows_lse - merged).unsqueeze(-1) +
                       block_out * at::exp(block_lse - merged).unsqueeze(-1));
        rows_lse.copy_(merged);
      }
      Ring::wait(work);
      if (s + 1 < ring.size) kv = kv_next;
    }
    ctx->save_for_backward({q, k, v, out, lse});
    ctx->saved_data["comm"] = reinterpret_cast<int64_t>(comm);
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    auto* comm = reinterpret_cast<Communicator*>(ctx->saved_data["comm"].toInt());
    Ring ring{*comm, comm->rank(), comm->size()};
    const variable_list saved = ctx->get_saved_variables();
    const at::Tensor &q = saved[0], &k = saved[1], &v = saved[2], &out = saved[3], &lse = saved[4];
    const at::Tensor dout = grads[0].contiguous();
    const int64_t n = q.size(2), d = q.size(3), group = q.size(1) / k.size(1);
    const double scale = 1.0 / std::sqrt(static_cast<double>(d));
    const at::Tensor mask = future_mask(n, ring.rank, ring.size, q.device());
    const at::Tensor delta = (dout * out).sum(-1);  // (B, H, n): rowsum(dO * O)
    at::Tensor dq = at::zeros_like(q);
    at::Tensor kv = at::stack({k, v}).contiguous();
    // The key/value gradient of the block in hand, summed over the ranks it has visited:
    // it travels one step behind its keys and values and ends at their owner.
    at::Tensor dkv_in;
    std::vector<WorkHandle> grad_work;
    for (int s = 0; s < ring.size; ++s) {
      at::Tensor kv_next;
      std::vector<WorkHandle> work;
      if (s + 1 < ring.size) work = ring.pass(kv, kv_next, kKvTag);
      const Block b = block_of(ring.rank, (ring.rank - s + ring.size) % ring.size, n);
      const BlockOperands o = block_operands(q, kv, b, group, scale, mask);
      const at::Tensor dos = dout.narrow(2, b.q_first, b.q_len);
      const at::Tensor probs = at::exp(o.scores - lse.narrow(2, b.q_first, b.q_len).unsqueeze(-1));
      const at::Tensor dprobs = at::matmul(dos, o.vs.transpose(-2, -1));
      const at::Tensor dscores =
          probs * (dprobs - delta.narrow(2, b.q_first, b.q_len).unsqueeze(-1)) * scale;
      dq.narrow(2, b.q_first, b.q_len).add_(at::matmul(dscores, o.ks));
      at::Tensor dkv = at::zeros_like(kv);
      dkv[0]
          .narrow(2, b.kv_first, b.kv_len)
          .copy_(sum_heads(at::matmul(dscores.transpose(-2, -1), o.qs), group));
      dkv[1]
          .narrow(2, b.kv_first, b.kv_len)
          .copy_(sum_heads(at::matmul(probs.transpose(-2, -1), dos), group));
      if (s > 0) {
        Ring::wait(grad_work);
        dkv = dkv_in + dkv;
      }
      grad_work = ring.pass(dkv, dkv_in, kGradTag);
      Ring::wait(work);
      if (s + 1 < ring.size) kv = kv_next;
    }
    Ring::wait(grad_work);  // this rank's own keys' and values' gradient, home
    return {dq, dkv_in[0], dkv_in[1], at::Tensor()};
  }
};

}  // namespace

at::Tensor ring_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          Communicator& cp) {
  return RingAttention::apply(q, k, v, &cp);
}

}  // namespace trident
