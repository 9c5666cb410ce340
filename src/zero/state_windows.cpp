// ZeroOptimizer::visit_states: the optimizer state window by window, so that a checkpoint
// of a rank whose states live in the nvme tier streams through the tier's ring instead of
// bringing the whole shard into memory.
#include <ATen/ATen.h>  // Tensor::narrow, at::empty

#include "zero/zero_optimizer.h"

namespace trident {

void ZeroOptimizer::visit_states(const std::function<void(const StateWindow&)>& visit,
                                 StateAccess access) {
  if (!states_in_tier_) {
    StateWindow all;
    for (size_t i = 0; i < params_.size(); ++i) {
      ParamStateView v = param_state(i);
      if (v.length > 0) all.emplace_back(i, std::move(v));
    }
    visit(all);
    return;
  }
  finish_grad_writes();
  for (Group& g : groups_) {
    if (!g.tier) continue;
    if (access == StateAccess::kLayout) {
      for (size_t k = 0; k < g.pieces.size(); ++k) visit(tier_window(g, k, nullptr));
      continue;
    }
    const bool write = access == StateAccess::kReadWrite;
    for (bool stored : g.grad_stored)
      TORCH_CHECK(!stored || !write,
                  "ZeRO offload: optimizer states changed while a gradient is in the tier");
    g.tier->stream(
        [&](size_t k, std::vector<at::Tensor>& planes) { visit(tier_window(g, k, &planes)); },
        /*read=*/true, write, write ? g.grad_plane : -1);
  }
}

StateWindow ZeroOptimizer::tier_window(Group& g, size_t k, const std::vector<at::Tensor>* planes) {
  const Group::Piece& piece = g.pieces[k];
  const Range dom = domain(g, piece.bucket);
  // The piece in buffer coordinates, and where it starts in the state tensors.
  const Range span{dom.begin + piece.begin, dom.begin + piece.begin + piece.length};
  const int64_t span_state = state_offset(g, piece.bucket) + piece.begin;
  StateWindow window;
  for (size_t kk : g.layout.buckets()[piece.bucket].params) {
    const Range part = g.layout.param_part(kk, span);
    if (part.size() == 0) continue;
    const int64_t in_piece = part.begin - span.begin, n = part.size();
    auto plane = [&](int p, at::ScalarType dtype) {
      if (planes != nullptr) return (*planes)[p].narrow(0, in_piece, n);
      return at::empty({n}, at::TensorOptions().dtype(dtype).device(at::kMeta));
    };
    ParamStateView v;
    v.start = part.begin - g.layout.places()[kk].offset;
    v.length = n;
    if (g.param_plane >= 0)
      v.param = plane(g.param_plane, param_dtype_);
    else if (g.data.defined())
      v.param = g.data.narrow(0, part.begin, n);
    else
      v.param = g.param_shard.narrow(0, span_state + in_piece, n);
    v.master = g.master_plane >= 0 ? plane(g.master_plane, state_dtype_) : v.param;
    v.exp_avg = plane(g.exp_avg_plane, state_dtype_);
    v.exp_avg_sq = plane(g.exp_avg_sq_plane, state_dtype_);
    window.emplace_back(g.params[kk], std::move(v));
  }
  return window;
}

}  // namespace trident
