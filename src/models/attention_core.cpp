// The attention core and the autograd function that recomputes it in backward.
#include "models/attention_core.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>  // torch::autograd::Function, torch::autograd::grad

#include <cmath>
#include <limits>

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

at::Tensor attention_math(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v) {
  const int64_t B = q.size(0), H = q.size(1), T = q.size(2), hd = q.size(3);
  // (T, T): 0 where a query may see the key, -inf on the keys after it (its future).
  const at::Tensor future =
      at::full({T, T}, -std::numeric_limits<double>::infinity(), q.options()).triu(1);
  // The product adds the mask and applies the scale itself (C = mask + alpha q k^T): no
  // separate passes over the (B*H, T, T) scores for them, forward or backward.
  at::Tensor att = at::baddbmm(future, q.reshape({B * H, T, hd}),
                               k.reshape({B * H, T, hd}).transpose(1, 2), /*beta=*/1.0,
                               /*alpha=*/1.0 / std::sqrt(static_cast<double>(hd)));
  att = at::softmax(att, -1);                                          // (B*H, T, T)
  return at::bmm(att, v.reshape({B * H, T, hd})).view({B, H, T, hd});  // (B, H, T, hd)
}

struct RecomputedAttention : torch::autograd::Function<RecomputedAttention> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& q, const at::Tensor& k,
                            const at::Tensor& v) {
    // Autograd records nothing inside a custom function's forward: only q, k, v are kept.
    ctx->save_for_backward({q, k, v});
    return attention_math(q, k, v);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const variable_list saved = ctx->get_saved_variables();
    at::AutoGradMode enable(true);
    variable_list inputs;
    for (const at::Tensor& t : saved) inputs.push_back(t.detach().requires_grad_(true));
    const at::Tensor y = attention_math(inputs[0], inputs[1], inputs[2]);
    return torch::autograd::grad({y}, inputs, {grads[0]});
  }
};

}  // namespace

at::Tensor cached_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            LayerKv& cache, int64_t group) {
  cache.keys = cache.keys.defined() ? at::cat({cache.keys, k}, 2) : k.contiguous();
  cache.values = cache.values.defined() ? at::cat({cache.values, v}, 2) : v.contiguous();
  at::Tensor keys = cache.keys, values = cache.values;  // (B, KV, total, hd)
  if (group > 1) {
    keys = keys.repeat_interleave(group, 1);  // (B, H, total, hd)
    values = values.repeat_interleave(group, 1);
  }
  const int64_t n = q.size(2), total = keys.size(2), hd = q.size(3);
  at::Tensor att =
      at::matmul(q, keys.transpose(-2, -1)) * (1.0 / std::sqrt(static_cast<double>(hd)));
  // Query i sits at position total - n + i: the keys after it are its future.
  at::Tensor future = at::ones({n, total}, q.options().dtype(at::kBool)).triu(total - n + 1);
  att = att.masked_fill(future, -std::numeric_limits<double>::infinity());
  return at::matmul(at::softmax(att, -1), values);  // (B, H, n, hd)
}

at::Tensor causal_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                            bool recompute) {
  if (!recompute) return attention_math(q, k, v);
  return RecomputedAttention::apply(q, k, v);
}

}  // namespace trident
