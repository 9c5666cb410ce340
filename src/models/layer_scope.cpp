// The autograd identity nodes that tell a LayerScope when the backward crosses a layer.
#include "models/layer_scope.h"

#include <ATen/ATen.h>                            // at::zeros_like
#include <ATen/core/grad_mode.h>                  // at::GradMode, AutoGradMode, NoGradGuard
#include <torch/csrc/autograd/autograd.h>         // torch::autograd::backward
#include <torch/csrc/autograd/custom_function.h>  // torch::autograd::Function
#include <torch/csrc/autograd/function.h>         // torch::autograd::Node, deleteNode
#include <torch/csrc/autograd/functions/utils.h>  // collect_next_edges, set_history

#include <cstdint>
#include <memory>   // std::shared_ptr
#include <utility>  // std::move

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// A pointer travels through the context as an integer: saved_data holds IValues only.
int64_t to_int(LayerScope* scope) {
  return static_cast<int64_t>(reinterpret_cast<intptr_t>(scope));
}
LayerScope* to_scope(const c10::IValue& v) {
  return reinterpret_cast<LayerScope*>(static_cast<intptr_t>(v.toInt()));
}

/// Identity on a layer's output; its backward runs first among the layer's nodes.
struct BeforeLayerBackward : torch::autograd::Function<BeforeLayerBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& y, int64_t scope,
                            int64_t unit) {
    ctx->saved_data["scope"] = scope;
    ctx->saved_data["unit"] = unit;
    return y;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    to_scope(ctx->saved_data["scope"])
        ->begin_backward(static_cast<int>(ctx->saved_data["unit"].toInt()));
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

/// Identity on a layer's input; its backward runs once every node of the layer that feeds
/// the input's gradient has run (which, in a layer whose every op depends on its input, is
/// every node that reads the layer's parameters).
struct AfterLayerBackward : torch::autograd::Function<AfterLayerBackward> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, int64_t scope,
                            int64_t unit) {
    ctx->saved_data["scope"] = scope;
    ctx->saved_data["unit"] = unit;
    return x;
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    to_scope(ctx->saved_data["scope"])
        ->end_backward(static_cast<int>(ctx->saved_data["unit"].toInt()));
    return {grads[0], at::Tensor(), at::Tensor()};
  }
};

/// The backward of a layer run without recording: gathers the layer, rebuilds its graph
/// from the kept input, runs that graph's backward (whose AccumulateGrad nodes give the
/// parameters their gradients) and hands the input's gradient on.
class RecomputeLayer : public torch::autograd::Node {
 public:
  RecomputeLayer(std::function<at::Tensor(const at::Tensor&)> fn, at::Tensor input,
                 LayerScope* scope, int unit)
      : fn_(std::move(fn)), input_(std::move(input)), scope_(scope), unit_(unit) {}

  variable_list apply(variable_list&& grads) override {
    if (scope_ != nullptr) scope_->begin_backward(unit_);
    at::Tensor x = input_.detach().requires_grad_(true);
    at::Tensor y;
    {
      at::AutoGradMode recording(true);
      y = fn_(x);
    }
    const at::Tensor grad = grads[0].defined() ? grads[0] : at::zeros_like(y);
    torch::autograd::backward({y}, {grad});
    if (scope_ != nullptr) scope_->end_backward(unit_);
    at::Tensor input_grad = x.grad();
    release_variables();
    return {input_grad};
  }
  void release_variables() override {
    input_ = at::Tensor();
    fn_ = nullptr;
  }
  std::string name() const override { return "trident::RecomputeLayer"; }

 private:
  std::function<at::Tensor(const at::Tensor&)> fn_;
  at::Tensor input_;  // detached: the layer's input values, not its graph
  LayerScope* scope_;
  int unit_;
};

at::Tensor run_recomputed(LayerScope* scope, int unit, const at::Tensor& x,
                          const std::function<at::Tensor(const at::Tensor&)>& fn) {
  if (scope != nullptr) scope->begin_forward(unit);
  at::Tensor y;
  {
    at::NoGradGuard no_grad;
    y = fn(x);
  }
  if (scope != nullptr) scope->end_forward(unit);
  std::shared_ptr<RecomputeLayer> node(new RecomputeLayer(fn, x.detach(), scope, unit),
                                       torch::autograd::deleteNode);
  node->set_next_edges(torch::autograd::collect_next_edges(x));
  torch::autograd::set_history(y, node);
  return y;
}

}  // namespace

at::Tensor run_layer(LayerScope* scope, int unit, const at::Tensor& x,
                     const std::function<at::Tensor(const at::Tensor&)>& fn, bool recompute) {
  if (recompute && at::GradMode::is_enabled() && x.requires_grad())
    return run_recomputed(scope, unit, x, fn);
  if (scope == nullptr) return fn(x);
  const bool recording = at::GradMode::is_enabled();
  scope->begin_forward(unit);
  const at::Tensor in =
      recording && x.requires_grad() ? AfterLayerBackward::apply(x, to_int(scope), unit) : x;
  at::Tensor y = fn(in);
  if (recording && y.requires_grad()) y = BeforeLayerBackward::apply(y, to_int(scope), unit);
  scope->end_forward(unit);
  return y;
}

}  // namespace trident
