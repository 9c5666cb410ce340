// LayerScope: what a model tells a parameter sharder about each layer it runs — the layer's
// forward begins and ends, and its backward is about to begin or has ended — so that ZeRO
// stage 3 can gather a layer's parameters just before they are used and release them after.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <functional>  // std::function

namespace trident {

/// Callbacks around each layer ("unit") of a model stage. Units are numbered in the order
/// the stage's forward runs them; the backward visits them in reverse. A model that knows
/// nothing of sharding calls none of them; run_layer() wires a layer to a scope.
class LayerScope {
 public:
  virtual ~LayerScope() = default;
  /// Before unit `unit`'s forward (or its recomputation): its parameters must be usable
  /// when this returns.
  virtual void begin_forward(int unit) = 0;
  /// After unit `unit`'s forward: its parameters may be released.
  virtual void end_forward(int unit) = 0;
  /// The gradient of unit `unit`'s output has arrived: its backward is about to run.
  virtual void begin_backward(int unit) = 0;
  /// The gradient of unit `unit`'s input is complete: its backward has run.
  virtual void end_backward(int unit) = 0;
};

/// Runs `fn` (unit `unit`'s forward) on `x` inside `scope` (none: just fn(x)). When autograd
/// records the call, identity nodes at the unit's output and input call begin_backward and
/// end_backward as the backward pass crosses them.
///
/// `recompute` (full activation checkpointing, layer by layer): when autograd records and
/// `x` requires grad, `fn` runs without recording and one node keeps `x` alone; its
/// backward gathers the unit again (begin_backward), runs `fn` on `x` recording, runs that
/// graph's backward, releases the unit (end_backward) and returns x's gradient. `fn` is
/// kept until then, so it must not capture anything that dies with the caller's frame.
at::Tensor run_layer(LayerScope* scope, int unit, const at::Tensor& x,
                     const std::function<at::Tensor(const at::Tensor&)>& fn,
                     bool recompute = false);

}  // namespace trident
