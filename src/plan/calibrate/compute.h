// Compute measurements for the planner, every rank measuring at once: matmul rate,
// memory bandwidth, a chain of weights, the AdamW update, and the forward and backward of
// trident's own GPT-2 and Llama blocks and GPT-2 stage.
// `budget` scales each measurement's timing (1: the full time, under 1: rougher, faster).
#pragma once
#include <ATen/core/Tensor.h>     // at::Tensor
#include <c10/core/ScalarType.h>  // at::ScalarType

#include <cstdint>     // int64_t
#include <functional>  // std::function
#include <vector>      // std::vector

#include "plan/cluster.h"  // plan::Cluster

namespace trident {
class Communicator;
}  // namespace trident

namespace trident::calibrate {

/// One n x n times n x n matmul in `dtype` per call, its operands made once; it does
/// 2 n^3 FLOPs.
std::function<void()> matmul_call(int64_t n, at::ScalarType dtype);

/// GB/s of c = a + b over 64 MB fp32 tensors (three tensors' bytes per call), per rank.
double memory_gbps(Communicator& world, double budget);

/// What a weight costs each forward and backward beyond its FLOPs, as a rate over its
/// bytes (GB/s, per rank while all run): a chain of linear layers' forward and backward,
/// their gradients accumulating, timed at 16 and at 512 tokens; the line through the two
/// times, at zero tokens, is the cost of the weights alone.
double weight_gbps(Communicator& world, double budget);

/// trident's AdamW update of an fp32 range as ZeroOptimizer::update_range runs it: the
/// decoupled decay, then adam_update_chunks (zero/adamw.h) in chunks of kUpdateChunk.
void adamw_update(at::Tensor param, const at::Tensor& grad, at::Tensor exp_avg,
                  at::Tensor exp_avg_sq);

/// Nanoseconds per element of adamw_update over a shard of 4 Mi fp32 elements (64 MiB
/// with its gradient and moments: beyond a core's caches, as a model's shard is), per rank
/// while all run: Cluster::adamw_ns_per_element.
double adamw_ns_per_element(Communicator& world, double budget);

/// The shape of a block's input; `llama`: trident's Llama block (models/llama.h) with
/// Llama's proportions, kv heads half the heads and a SwiGLU width of 8/3 hidden rounded
/// up to a multiple of 32, instead of the GPT-2 block.
struct BlockShape {
  int64_t batch, seq, hidden, heads;
  bool llama = false;
};

/// Seconds of the forward and backward of one of trident's GPT-2 or Llama blocks
/// (models/gpt.h, models/llama.h: the code training runs) on an input of `shape`, its
/// weights sharded over `tp`, the output's gradient a dense tensor as a next layer's is;
/// per rank while all run.
double block_s(const BlockShape& shape, Communicator& tp, Communicator& world, double budget);

/// A block of `shape` built as block_step's, its passes apart: `forward` runs the forward
/// on the block's input (which requires grad) and returns the output, whose gradient for
/// a backward is `grad`; `weights` are the block's parameters, to hook their gradients.
/// With `cp`, ring attention over it, as ring_block_timing's.
struct BlockPasses {
  std::function<at::Tensor()> forward;
  at::Tensor grad;
  std::vector<at::Tensor> weights;
};
BlockPasses block_passes(const BlockShape& shape, Communicator& tp, Communicator* cp = nullptr);

/// One forward and backward of the block of `shape` per call, the block built once (for
/// measurements that time the block beside something else).
std::function<void()> block_step(const BlockShape& shape, Communicator& tp);

/// A tp block's forward and backward: its seconds, and the seconds of them spent inside
/// its tp all-reduces (posting, polling, waiting for the peer), per call; the ranks' mean.
struct TpBlockTiming {
  double seconds = 0, tp_wait_s = 0;
};
TpBlockTiming tp_block_timing(const BlockShape& shape, Communicator& tp, Communicator& world,
                              double budget);

/// A block's forward and backward with ring attention over `cp` (context parallelism):
/// the sequences of `shape` split among cp's ranks, each holding shape.seq / cp tokens of
/// each; its seconds and the seconds spent inside the ring's transfers, per call.
struct RingBlockTiming {
  double seconds = 0, cp_wait_s = 0;
};
RingBlockTiming ring_block_timing(const BlockShape& shape, Communicator& cp, Communicator& tp,
                                  Communicator& world, double budget);

/// Seconds of the forward and backward of a one-layer GptStage (embedding, the block,
/// final norm, tied head, loss) on token ids of `shape` and a 64-token vocabulary, over
/// `tp`; per rank while all run.
double stage_s(const BlockShape& shape, Communicator& tp, Communicator& world, double budget);

/// The planner's prediction for one block's forward and backward on `c` without the
/// elementwise term: matmul FLOPs at the measured rate, its weights at weight_gbps, plus
/// the fixed overhead.
double block_matmul_s(const BlockShape& x, const plan::Cluster& c);

/// Bytes of activations the block keeps (Korthikanti et al., fp32), what the planner
/// charges elementwise work for.
double block_activation_bytes(const BlockShape& x);

/// MemTotal from /proc/meminfo in bytes, or 0.
double mem_total_bytes();

}  // namespace trident::calibrate
