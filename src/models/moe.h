// The Mixture-of-Experts MLP of the Llama family (Mixtral's block_sparse_moe): a router
// sends each token to its top k of E SwiGLU experts and sums their outputs weighted by the
// router's renormalised probabilities; the load-balancing loss (per sequence, so that no
// layout knob changes it) and the z-loss join the objective through the backward pass of
// the layer's output.
#pragma once
#include <torch/nn/module.h>  // torch::nn::Module

#include <memory>
#include <string>
#include <vector>

#include "models/moe_stats.h"  // MoeLayerStats
#include "tensor_parallel/layers.h"
#include "tensor_parallel/parameter.h"

namespace trident {
class Communicator;

struct MoeOptions {
  int64_t experts = 0;
  int64_t top_k = 2;
  int64_t ffn_hidden = 0;  // an expert's SwiGLU intermediate size
  double aux_loss_coeff = 0.0;
  double z_loss_coeff = 0.0;
  double capacity_factor = 0.0;  // 0: dropless
  bool shared_expert = false;    // one more expert every token goes to, weight 1
  /// The sigmoid router (DeepSeek-V3): scores sigmoid(logits), the top k of score + bias
  /// chosen, their scores renormalised as weights; else softmax, top k, renormalised.
  bool sigmoid = false;
  /// Context parallelism: the ranks that hold the other parts of each sequence (null or a
  /// group of one: whole sequences here). The balancing loss's per-sequence choice counts
  /// are summed over them; dropless only (a capacity would need the sequence's order).
  Communicator* cp = nullptr;
};

/// E experts, each a SwiGLU MLP split over tp as the dense one (gate and up column-parallel,
/// down row-parallel), and a router (E, C) replicated over tp, computed in at least float32.
/// Every tp rank routes the same tokens alike. Deterministic whatever the layout: the top k
/// are taken by a stable sort (ties to the lower expert index), and a token's output sums
/// its experts in increasing index order. With a capacity factor, an expert takes at most
/// ceil(factor * T * k / E) tokens of each sequence, the first in token order: a sequence
/// is never split, so no layout changes which tokens are dropped.
/// With an ep group of P ranks, rank q holds experts [q E/P, (q+1) E/P) only, and the
/// tokens meet their experts by all-to-all (models/expert_parallel.h); routing, the
/// weights, the losses and the combine stay on the token's rank, so they do not change.
class MoeMlp : public torch::nn::Module {
 public:
  /// Parameters "<prefix>router.weight", "<prefix>experts.<j>.{gate,up,down}.weight" (j
  /// global; with `ep`, this rank's experts only) and, with a shared expert,
  /// "<prefix>shared.{gate,up,down}.weight". `ep`: the expert-parallel group, or null for
  /// every expert on this rank.
  MoeMlp(ParamRegistry& params, Communicator& tp, Communicator* ep, const std::string& prefix,
         int64_t hidden, const MoeOptions& options, double init_std);
  /// m (B, T, C) replicated over tp -> (B, T, C), B whole sequences (with context
  /// parallelism, this rank's T tokens of each of B sequences). The layer's auxiliary
  /// losses join the objective through the output's backward: aux_loss_coeff * E *
  /// sum_e f_e P_e per sequence, averaged over the step's sequences, and z_loss_coeff *
  /// logsumexp(router logits)^2 averaged over its tokens; `loss_scale` is the objective's
  /// 1 / (tokens of the step), as the stage's forward gets it.
  at::Tensor forward(const at::Tensor& m, double loss_scale);
  /// The statistics since the last call, and a fresh start.
  MoeLayerStats take_statistics();
  /// The sigmoid router's bias of each expert (E values): it shifts which experts are
  /// chosen, not their weights, and has no gradient.
  void set_router_bias(const std::vector<double>& bias);

 private:
  /// One expert: down(silu(gate x) * up x), "<name>.{gate,up,down}.weight".
  struct Expert {
    std::shared_ptr<ColumnParallelLinear> gate, up;
    std::shared_ptr<RowParallelLinear> down;
    at::Tensor forward(const at::Tensor& x) const;
  };
  /// Parameters "<name>.{gate,up,down}.weight", in a submodule `module`; `routed`: a
  /// routed expert's (ParamSpec::expert).
  Expert make_expert(ParamRegistry& params, Communicator& tp, const std::string& name,
                     const std::string& module, int64_t hidden, double init_std, bool routed);
  /// Each expert's output for its rows `inputs[e]` (all E experts; rows (n_e, C)).
  std::vector<at::Tensor> run_experts(const std::vector<at::Tensor>& inputs);

  MoeOptions o_;
  Communicator* ep_ = nullptr;  // null or of size 1: every expert here
  at::Tensor router_;
  at::Tensor bias_;              // the sigmoid router's, (E) in its scores' dtype and device;
                                 // undefined: zeros
  std::vector<Expert> experts_;  // this rank's, in global order
  Expert shared_;                // its layers null without a shared expert
  // This step's statistics, kept as tensors so that the forward waits on nothing.
  at::Tensor aux_sum_, load_sum_;
  int64_t dropped_ = 0;
};

}  // namespace trident
