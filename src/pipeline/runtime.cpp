// Executes pipeline instructions: forward/backward/recompute of micro-batches and the
// transfers between neighbouring stages.
#include "pipeline/runtime.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>  // TORCH_CHECK
#include <torch/autograd.h>      // torch::autograd::backward

#include <algorithm>  // std::remove_if
#include <chrono>

#include "common/memory_tracker.h"
#include "models/model_stage.h"
#include "parallel/parallel_context.h"

namespace trident {

namespace {

using pipeline::Op;
using Clock = std::chrono::steady_clock;

// Activations and gradients travel on separate tags so that a channel never confuses them.
int activation_tag(int k) { return 2 * k; }
int grad_tag(int k) { return 2 * k + 1; }

/// Frees a tensor's storage but keeps its autograd node: backward needs the node (which
/// holds what it saved), not the output's values.
void free_data(at::Tensor& t) {
  if (t.defined()) t.set_data(at::empty({0}, t.options()));
}

}  // namespace

PipelineRuntime::PipelineRuntime(ModelStage& stage, ParallelContext& ctx,
                                 const RuntimeOptions& options)
    : stage_(stage), ctx_(ctx), options_(options) {}

void PipelineRuntime::progress() {
  // A completed send has released its buffer; its handle is dropped.
  pending_sends_.erase(std::remove_if(pending_sends_.begin(), pending_sends_.end(),
                                      [](PendingSend& s) { return s.work->test(); }),
                       pending_sends_.end());
}

int64_t PipelineRuntime::bytes_in_transit() {
  progress();
  int64_t bytes = 0;
  for (const auto& s : pending_sends_) bytes += s.bytes;
  return bytes;
}

void PipelineRuntime::wait_for_sends() {
  for (auto& s : pending_sends_) s.work->wait();
  pending_sends_.clear();
}

void PipelineRuntime::forward(int k, InFlight& f, const MicroBatch& mb, double loss_scale) {
  at::Tensor input = stage_.is_first() ? mb.input : f.input;
  if (options_.checkpointing) {
    // Keep only the input; the graph is rebuilt just before this micro-batch's backward.
    at::NoGradGuard no_grad;
    f.output = stage_.forward(input, mb.targets, loss_scale);
  } else {
    f.output = stage_.forward(input, mb.targets, loss_scale);
  }
  (void)k;
}

void PipelineRuntime::backward(int k, InFlight& f, const MicroBatch& mb, double loss_scale) {
  (void)k;
  if (options_.checkpointing) {
    at::Tensor input = stage_.is_first() ? mb.input : f.input;
    f.output = stage_.forward(input, mb.targets, loss_scale);
  }
  if (stage_.is_last()) {
    f.output.backward();
  } else {
    TORCH_CHECK(f.grad.defined(), "pipeline: backward of micro-batch ", k,
                " before its gradient was received");
    torch::autograd::backward({f.output}, {f.grad});
  }
}

StepResult PipelineRuntime::run(const pipeline::Schedule& schedule,
                                const std::function<MicroBatch(int)>& micro_batch,
                                double loss_scale, StepHooks& hooks) {
  StepResult result;
  std::map<int, InFlight> in_flight;
  std::map<int, MicroBatch> batches;
  Communicator& pp = ctx_.pp();
  const int stage = ctx_.coord().pp;
  const std::vector<int64_t> shape = stage_.activation_shape(options_.micro_batch_size);
  const auto act_options = at::TensorOptions().dtype(options_.dtype);
  const auto t0 = Clock::now();
  result.start_s = std::chrono::duration<double>(t0.time_since_epoch()).count();
  const int64_t bytes_at_start = live_tensor_bytes();
  int backwards_left = 0;
  for (const auto& ins : schedule) backwards_left += ins.op == Op::kBackward ? 1 : 0;

  auto batch = [&](int k) -> const MicroBatch& {
    auto it = batches.find(k);
    if (it == batches.end()) it = batches.emplace(k, micro_batch(k)).first;
    return it->second;
  };

  for (const auto& ins : schedule) {
    const int k = ins.micro_batch;
    InstructionRecord record{ins, std::chrono::duration<double>(Clock::now() - t0).count()};
    switch (ins.op) {
      case Op::kRecvActivation: {
        at::Tensor buffer = at::empty(shape, act_options);
        pp.recv(buffer, stage - 1, activation_tag(k))->wait();
        in_flight[k].input = buffer.requires_grad_(true);
        break;
      }
      case Op::kForward: {
        forward(k, in_flight[k], batch(k), loss_scale);
        result.max_in_flight = std::max(result.max_in_flight, static_cast<int>(in_flight.size()));
        if (stage_.is_last()) result.loss += in_flight[k].output.item<double>();
        // What the stage holds for its in-flight micro-batches once this forward is done.
        // Sends are tested first: a send that completes releases its buffer, so the bytes
        // still in transit and the live bytes are read in one consistent state.
        const int64_t in_transit = bytes_in_transit();
        result.peak_activation_bytes = std::max(result.peak_activation_bytes,
                                                live_tensor_bytes() - bytes_at_start - in_transit);
        break;
      }
      case Op::kSendActivation: {
        InFlight& f = in_flight[k];
        // The send owns a detached copy's storage; the output itself keeps only its node.
        at::Tensor payload = f.output.detach().contiguous();
        pending_sends_.push_back({pp.send(payload, stage + 1, activation_tag(k)),
                                  static_cast<int64_t>(payload.nbytes())});
        free_data(f.output);
        break;
      }
      case Op::kRecvGrad: {
        at::Tensor buffer = at::empty(shape, act_options);
        pp.recv(buffer, stage + 1, grad_tag(k))->wait();
        in_flight[k].grad = buffer;
        break;
      }
      case Op::kBackward: {
        --backwards_left;
        record.recompute = options_.checkpointing;
        if (hooks.begin_backward) hooks.begin_backward(backwards_left == 0);
        InFlight& f = in_flight[k];
        backward(k, f, batch(k), loss_scale);
        if (hooks.end_backward) hooks.end_backward();
        f.output = at::Tensor();
        f.grad = at::Tensor();
        if (stage_.is_first()) {
          in_flight.erase(k);
          batches.erase(k);
        }
        break;
      }
      case Op::kSendGrad: {
        InFlight& f = in_flight[k];
        at::Tensor grad = f.input.grad().contiguous();
        pending_sends_.push_back(
            {pp.send(grad, stage - 1, grad_tag(k)), static_cast<int64_t>(grad.nbytes())});
        in_flight.erase(k);
        batches.erase(k);
        break;
      }
      case Op::kReduceGrads: {
        wait_for_sends();
        if (hooks.reduce_grads) hooks.reduce_grads();
        break;
      }
      case Op::kOptimizerStep: {
        if (hooks.optimizer_step) hooks.optimizer_step(result.loss);
        break;
      }
    }
    progress();
    record.end = std::chrono::duration<double>(Clock::now() - t0).count();
    result.records.push_back(record);
  }
  wait_for_sends();
  return result;
}

}  // namespace trident
