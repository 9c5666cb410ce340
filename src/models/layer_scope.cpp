// The autograd identity nodes that tell a LayerScope when the backward crosses a layer.
#include "models/layer_scope.h"

#include <ATen/core/grad_mode.h>                  // at::GradMode
#include <torch/csrc/autograd/custom_function.h>  // torch::autograd::Function

#include <cstdint>

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

}  // namespace

at::Tensor run_layer(LayerScope* scope, int unit, const at::Tensor& x,
                     const std::function<at::Tensor(const at::Tensor&)>& fn) {
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
