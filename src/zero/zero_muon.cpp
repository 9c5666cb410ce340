// ZeroOptimizer, Muon's side: the momentum of each Muon parameter's part on this rank, its
// contribution to the stage's exchange, and the orthogonalised update of the part.
#include <ATen/ATen.h>           // Tensor ops
#include <c10/util/Exception.h>  // TORCH_CHECK

#include "parallel/parallel_context.h"  // ParallelContext
#include "zero/muon_exchange.h"         // MuonExchange
#include "zero/zero_optimizer.h"

namespace trident {

void ZeroOptimizer::init_muon() {
  TORCH_CHECK(!states_in_tier_ && !zero_.offload.optimizer,
              "Muon keeps its momentum in memory; the nvme tier holds AdamW's states only");
  for (size_t i = 0; i < params_.size(); ++i)
    if (updated_by_muon(i)) muon_held_.push_back(i);
  const auto state = at::TensorOptions().dtype(state_dtype_).device(device_);
  muon_ = std::make_unique<MuonExchange>(
      params_, muon_held_, ctx_.stage(), zero_.muon, state,
      zero_.muon.exchange_bytes / static_cast<int64_t>(c10::elementSize(state_dtype_)));
}

std::string ZeroOptimizer::muon_description() const {
  return muon_ ? "Muon (one momentum) for the blocks' matrices, AdamW for the rest: " +
                     muon_->description()
               : std::string();
}

at::Tensor ZeroOptimizer::grad_in_domain(size_t i) {
  const auto [gi, k] = where_[i];
  Group& g = groups_[gi];
  const ParamPlace& place = g.layout.places()[k];
  const Range dom = domain(g, place.bucket);
  const Range part = g.layout.param_part(k, dom);
  if (shards_grads())
    return g.grad_shard.narrow(0, state_offset(g, place.bucket) + part.begin - dom.begin,
                               part.size());
  return g.grad.narrow(0, part.begin, part.size());
}

void ZeroOptimizer::muon_step(double lr, double grad_scale) {
  for (int round = 0; round < muon_->rounds(); ++round) muon_round(round, lr, grad_scale);
}

void ZeroOptimizer::muon_round(int round, double lr, double grad_scale) {
  const MuonOptions& o = zero_.muon;
  const int tp_rank = ctx_.tp().rank(), tp = ctx_.tp().size();
  muon_->begin(round);
  // The momentum of this rank's part, M <- mu M + G, and the part of the matrix to
  // orthogonalise, G + mu M (Nesterov) or M. One rank contributes each element: a dp group
  // whose stage (0) keeps whole copies contributes from its first rank, and of tp ranks
  // holding copies of a shard only the primary one.
  for (size_t k = 0; k < muon_held_.size(); ++k) {
    if (muon_->round_of(k) != round) continue;
    const size_t i = muon_held_[k];
    const ParamStateView state = param_state(i);
    if (state.length == 0) continue;
    const at::Tensor g = grad_in_domain(i).to(state_dtype_) * grad_scale;
    state.exp_avg.mul_(o.momentum).add_(g);
    const at::Tensor u = o.nesterov ? g.add(state.exp_avg, o.momentum) : state.exp_avg;
    const ParamSpec& spec = params_[i].spec;
    const Group& group = groups_[where_[i].first];
    const bool contributes =
        (zero_.stage > 0 || group.dp->rank() == 0) && is_primary_copy(spec.shard, tp_rank);
    if (!contributes) continue;
    // The tp shard's shape (stage 3's parameters are empty between their layers' uses).
    at::Tensor local = at::zeros(local_shape(spec, tp), u.options());
    local.view({-1}).narrow(0, state.start, state.length).copy_(u);
    at::Tensor slot = muon_->slot(k);
    place_shard(spec, tp_rank, tp, local, slot);
  }
  muon_->run(round);
  // W <- W (1 - lr wd) - lr O, O being the scaled orthogonalised update.
  const double muon_lr = lr * o.lr_ratio;
  for (size_t k = 0; k < muon_held_.size(); ++k) {
    if (muon_->round_of(k) != round) continue;
    const size_t i = muon_held_[k];
    const ParamStateView state = param_state(i);
    if (state.length == 0) continue;
    const ParamSpec& spec = params_[i].spec;
    const at::Tensor update = cut_shard(spec, tp_rank, tp, muon_->slot(k))
                                  .reshape({-1})
                                  .narrow(0, state.start, state.length);
    if (adamw_.weight_decay != 0.0 && spec.weight_decay)
      state.master.mul_(1.0 - muon_lr * adamw_.weight_decay);
    state.master.add_(update, -muon_lr);
    if (has_master()) state.param.copy_(state.master);
  }
}

}  // namespace trident
