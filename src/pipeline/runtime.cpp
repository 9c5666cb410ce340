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

// Each boundary between virtual stages j and j + 1 (of stages * chunks) carries one
// activation and one gradient per micro-batch, on tags of their own.
int activation_tag(int k, int boundary, int virtual_stages) {
  return 2 * (k * virtual_stages + boundary);
}
int grad_tag(int k, int boundary, int virtual_stages) {
  return 2 * (k * virtual_stages + boundary) + 1;
}

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

void PipelineRuntime::forward(ModelStage& chunk, InFlight& f, const MicroBatch& mb,
                              double loss_scale) {
  at::Tensor input = chunk.is_first() ? mb.input : f.input;
  if (recompute_stage_) {
    // Keep only the input; the graph is rebuilt just before this micro-batch's backward.
    at::NoGradGuard no_grad;
    f.output = chunk.forward(input, mb.targets, loss_scale);
  } else {
    f.output = chunk.forward(input, mb.targets, loss_scale);
  }
}

void PipelineRuntime::recompute(ModelStage& chunk, InFlight& f, const MicroBatch& mb,
                                double loss_scale) {
  if (!recompute_stage_) return;
  at::Tensor input = chunk.is_first() ? mb.input : f.input;
  f.output = chunk.forward(input, mb.targets, loss_scale);
}

void PipelineRuntime::backward(ModelStage& chunk, int k, InFlight& f, const MicroBatch& mb,
                               double loss_scale) {
  recompute(chunk, f, mb, loss_scale);
  if (chunk.is_last()) {
    f.output.backward();
  } else {
    TORCH_CHECK(f.grad.defined(), "pipeline: backward of micro-batch ", k,
                " before its gradient was received");
    torch::autograd::backward({f.output}, {f.grad});
  }
}

void PipelineRuntime::backward_input(ModelStage& chunk, int k, InFlight& f, const MicroBatch& mb,
                                     double loss_scale) {
  recompute(chunk, f, mb, loss_scale);
  // The first chunk's input is token ids: there is no input gradient, and W does it all.
  if (chunk.is_first()) return;
  TORCH_CHECK(chunk.is_last() || f.grad.defined(), "pipeline: backward of micro-batch ", k,
              " before its gradient was received");
  // Only the path to the input runs: autograd skips each node's weight-gradient outputs
  // (no AccumulateGrad is reached), and the graph with its saved tensors stays for W.
  const torch::autograd::variable_list grad_out =
      chunk.is_last() ? torch::autograd::variable_list{} : torch::autograd::variable_list{f.grad};
  f.input_grad = torch::autograd::grad({f.output}, {f.input}, grad_out, /*retain_graph=*/true)[0];
}

void PipelineRuntime::backward_weight(ModelStage& chunk, int k, InFlight& f) {
  TORCH_CHECK(f.output.defined(), "pipeline: weight gradient of micro-batch ", k,
              " before its input gradient");
  std::vector<at::Tensor> weights;
  for (const Parameter& p : chunk.params().params()) weights.push_back(p.tensor);
  const torch::autograd::variable_list grad_out =
      chunk.is_last() ? torch::autograd::variable_list{} : torch::autograd::variable_list{f.grad};
  // The graph BI kept, with only the weights as inputs: the input's own gradient is not
  // recomputed, and the AccumulateGrad nodes (ZeRO's gradient hooks) fire here.
  torch::autograd::backward({f.output}, grad_out, /*retain_graph=*/false, /*create_graph=*/false,
                            weights);
}

StepResult PipelineRuntime::run(const pipeline::Schedule& schedule,
                                const std::function<MicroBatch(int)>& micro_batch,
                                double loss_scale, StepHooks& hooks) {
  StepResult result;
  const int chunks = stage_.num_chunks();
  std::map<int, InFlight> in_flight;  // key: micro-batch * chunks + chunk
  std::map<int, MicroBatch> batches;
  std::map<int, int> chunks_done;  // per micro-batch: chunks whose work is over
  Communicator& pp = ctx_.pp();
  const int stage = ctx_.coord().pp;
  const int stages = ctx_.grid().pp();
  const int virtual_stages = stages * chunks;
  const int next = (stage + 1) % stages;           // chunk c's successor: c or c + 1
  const int prev = (stage + stages - 1) % stages;  // chunk c's predecessor: c or c - 1
  const std::vector<int64_t> shape = stage_.activation_shape(options_.micro_batch_size);
  const auto act_options = at::TensorOptions().dtype(options_.dtype).device(options_.device);
  const auto t0 = Clock::now();
  result.start_s = std::chrono::duration<double>(t0.time_since_epoch()).count();
  const int64_t bytes_at_start = live_tensor_bytes();
  int weight_backwards_left = 0;
  bool split = false;  // a backward in two halves runs over one graph twice
  for (const auto& ins : schedule) {
    weight_backwards_left += ins.op == Op::kBackward || ins.op == Op::kBackwardWeight ? 1 : 0;
    split = split || ins.op == Op::kBackwardInput;
  }
  // Checkpoints per layer, except where one graph serves two backward halves.
  recompute_stage_ = options_.checkpointing && split;
  for (int c = 0; c < chunks; ++c) {
    stage_.chunk(c).set_reentrant_backward(split);
    stage_.chunk(c).set_layer_recompute(options_.checkpointing && !split);
  }

  auto batch = [&](int k) -> const MicroBatch& {
    auto it = batches.find(k);
    if (it == batches.end()) it = batches.emplace(k, micro_batch(k)).first;
    return it->second;
  };
  // A chunk's micro-batch is over once its weights are done and its gradient is sent.
  auto retire_if_done = [&](int k, int c) {
    const auto it = in_flight.find(k * chunks + c);
    if (it == in_flight.end() || !it->second.weights_done || !it->second.grad_sent) return;
    in_flight.erase(it);
    if (++chunks_done[k] == chunks) {
      batches.erase(k);
      chunks_done.erase(k);
    }
  };
  auto weight_backward = [&](const pipeline::Instruction& ins, ModelStage& chunk,
                             const std::function<void(InFlight&)>& run_backward) {
    --weight_backwards_left;
    if (hooks.begin_backward) hooks.begin_backward(weight_backwards_left == 0);
    InFlight& f = in_flight[ins.micro_batch * chunks + ins.chunk];
    run_backward(f);
    if (hooks.end_backward) hooks.end_backward();
    f.output = at::Tensor();
    f.grad = at::Tensor();
    f.weights_done = true;
    f.grad_sent = f.grad_sent || chunk.is_first();
  };

  for (const auto& ins : schedule) {
    const int k = ins.micro_batch;
    const int c = ins.chunk;
    TORCH_CHECK(ins.micro_batch < 0 || (c >= 0 && c < chunks), "pipeline: instruction ",
                pipeline::to_string(ins), " names chunk ", c, " but this stage holds ", chunks);
    ModelStage& chunk = stage_.chunk(ins.micro_batch < 0 ? 0 : c);
    const int vstage = c * stages + stage;  // this chunk's place in the virtual pipeline
    InstructionRecord record{ins, std::chrono::duration<double>(Clock::now() - t0).count()};
    const double all_to_all_before = ctx_.ep().total_wait_seconds();
    switch (ins.op) {
      case Op::kRecvActivation: {
        at::Tensor buffer = at::empty(shape, act_options);
        pp.recv(buffer, prev, activation_tag(k, vstage - 1, virtual_stages))->wait();
        in_flight[k * chunks + c].input = buffer.requires_grad_(true);
        break;
      }
      case Op::kForward: {
        InFlight& f = in_flight[k * chunks + c];
        forward(chunk, f, batch(k), loss_scale);
        result.max_in_flight = std::max(result.max_in_flight, static_cast<int>(in_flight.size()));
        if (chunk.is_last()) {
          const double loss = f.output.item<double>();
          result.loss += loss;
          result.micro_batch_losses[k] += loss;
        }
        // What the stage holds for its in-flight micro-batches once this forward is done.
        // Sends are tested first: a send that completes releases its buffer, so the bytes
        // still in transit and the live bytes are read in one consistent state.
        const int64_t in_transit = bytes_in_transit();
        result.peak_activation_bytes = std::max(result.peak_activation_bytes,
                                                live_tensor_bytes() - bytes_at_start - in_transit);
        break;
      }
      case Op::kSendActivation: {
        InFlight& f = in_flight[k * chunks + c];
        // The send owns a detached copy's storage; the output itself keeps only its node.
        at::Tensor payload = f.output.detach().contiguous();
        pending_sends_.push_back({pp.send(payload, next, activation_tag(k, vstage, virtual_stages)),
                                  static_cast<int64_t>(payload.nbytes())});
        free_data(f.output);
        break;
      }
      case Op::kRecvGrad: {
        at::Tensor buffer = at::empty(shape, act_options);
        pp.recv(buffer, next, grad_tag(k, vstage, virtual_stages))->wait();
        in_flight[k * chunks + c].grad = buffer;
        break;
      }
      case Op::kBackward: {
        record.recompute = options_.checkpointing;
        weight_backward(ins, chunk,
                        [&](InFlight& f) { backward(chunk, k, f, batch(k), loss_scale); });
        retire_if_done(k, c);
        break;
      }
      case Op::kBackwardInput: {
        record.recompute = options_.checkpointing;
        backward_input(chunk, k, in_flight[k * chunks + c], batch(k), loss_scale);
        break;
      }
      case Op::kBackwardWeight: {
        weight_backward(ins, chunk, [&](InFlight& f) { backward_weight(chunk, k, f); });
        retire_if_done(k, c);
        break;
      }
      case Op::kSendGrad: {
        InFlight& f = in_flight[k * chunks + c];
        at::Tensor grad = (f.input_grad.defined() ? f.input_grad : f.input.grad()).contiguous();
        pending_sends_.push_back({pp.send(grad, prev, grad_tag(k, vstage - 1, virtual_stages)),
                                  static_cast<int64_t>(grad.nbytes())});
        f.input_grad = at::Tensor();
        f.grad_sent = true;
        retire_if_done(k, c);
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
    record.all_to_all_s = ctx_.ep().total_wait_seconds() - all_to_all_before;
    result.records.push_back(record);
  }
  wait_for_sends();
  return result;
}

}  // namespace trident
