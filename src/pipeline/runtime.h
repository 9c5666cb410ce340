// The pipeline runtime: executes one stage's instruction list for one optimizer step —
// forward and backward of micro-batches on the stage's model chunks (recomputing the
// forward first under activation checkpointing, splitting the backward into its input and
// weight halves where the schedule says so), point-to-point transfers with the
// neighbouring stages — and records when each instruction ran. It decides nothing: the
// order comes from the schedule.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "parallel/communicator.h"
#include "pipeline/schedule.h"

namespace trident {
class ModelStage;
class ParallelContext;

/// What a micro-batch gives the stage: token ids on the first stage, targets on the last.
struct MicroBatch {
  at::Tensor input;    // (B, T) int64
  at::Tensor targets;  // (B, T) int64
};

/// The optimizer's part in a step; the runtime calls these at the matching instructions.
/// begin_backward/end_backward wrap each backward that accumulates weight gradients: a
/// whole backward (B) or a weight half (W), never an input half (BI).
struct StepHooks {
  std::function<void(bool last_micro_batch)> begin_backward;
  std::function<void()> end_backward;
  std::function<void()> reduce_grads;
  /// Gets this stage's loss so far (the sum of its micro-batch losses on the last stage, else
  /// 0), so that the update can depend on the step's agreed loss.
  std::function<void(double stage_loss)> optimizer_step;
};

struct RuntimeOptions {
  /// "full": the blocks keep only their inputs and each rebuilds its graph in its own
  /// backward (ModelStage::set_layer_recompute); under ZB-H1, whose input and weight
  /// halves run over one graph, the stage keeps each micro-batch's input and rebuilds the
  /// whole stage's graph before the input half.
  bool checkpointing = false;
  int64_t micro_batch_size = 1;
  at::ScalarType dtype = at::kFloat;
  at::Device device = at::kCPU;  // of the activations and gradients received from neighbours
};

/// One executed instruction, in seconds since the step began.
struct InstructionRecord {
  pipeline::Instruction instruction;
  double start = 0.0;
  double end = 0.0;
  bool recompute = false;  // a backward that began by recomputing its forward
  /// Seconds it spent inside the experts' all-to-alls (the ep group's operations: posting
  /// and waiting), which a compute instruction of an expert-parallel MoE model contains.
  double all_to_all_s = 0.0;
};

struct StepResult {
  double loss = 0.0;  // the sum of this stage's micro-batch losses (last stage), else 0
  std::map<int, double> micro_batch_losses;  // the same per micro-batch (last stage)
  double start_s = 0.0;  // when the step began, steady clock seconds (shared by the ranks
                         // of a node), the origin of the records' times
  std::vector<InstructionRecord> records;
  int max_in_flight = 0;  // micro-batches forwarded but not yet backwarded
  /// Most tensor bytes held above the step's start right after a forward, less the
  /// buffers of sends still in transit: the in-flight micro-batches' activations
  /// (measured when the memory tracker is installed).
  int64_t peak_activation_bytes = 0;
};

class PipelineRuntime {
 public:
  PipelineRuntime(ModelStage& stage, ParallelContext& ctx, const RuntimeOptions& options);

  /// Runs `schedule`; `micro_batch(k)` supplies micro-batch k's data; the last stage's
  /// loss is scaled by `loss_scale` (one over the global batch's token count).
  StepResult run(const pipeline::Schedule& schedule,
                 const std::function<MicroBatch(int)>& micro_batch, double loss_scale,
                 StepHooks& hooks);

 private:
  struct InFlight {
    at::Tensor input;           // what the chunk's forward consumed (activations require grad)
    at::Tensor output;          // the activations sent on, or the scaled loss on the last chunk
    at::Tensor grad;            // the gradient received for `output`
    at::Tensor input_grad;      // the input half's result (BI), until it is sent
    bool weights_done = false;  // B or W ran: the chunk's weight gradients are accumulated
    bool grad_sent = false;     // SG ran, or the chunk has no previous stage to send to
  };
  void forward(ModelStage& chunk, InFlight& f, const MicroBatch& mb, double loss_scale);
  /// Rebuilds the stage's graph under stage-wide checkpointing (its forward kept only the
  /// input).
  void recompute(ModelStage& chunk, InFlight& f, const MicroBatch& mb, double loss_scale);
  void backward(ModelStage& chunk, int k, InFlight& f, const MicroBatch& mb, double loss_scale);
  /// BI: the gradient of the chunk's input only; the graph is kept for W.
  void backward_input(ModelStage& chunk, int k, InFlight& f, const MicroBatch& mb,
                      double loss_scale);
  /// W: the weight gradients, through the graph BI kept.
  void backward_weight(ModelStage& chunk, int k, InFlight& f);
  /// Tests the pending sends and drops the completed ones.
  void progress();
  /// Bytes of sends posted but not completed (tests them first).
  int64_t bytes_in_transit();
  void wait_for_sends();

  ModelStage& stage_;
  ParallelContext& ctx_;
  RuntimeOptions options_;
  bool recompute_stage_ = false;  // checkpointing of the whole stage (this step's schedule)
  struct PendingSend {
    WorkHandle work;
    int64_t bytes;
  };
  std::vector<PendingSend> pending_sends_;
};

}  // namespace trident
