// ZeroOptimizer, update side: the global gradient norm, AdamW on the rank's domain of each
// bucket, the all-gather of updated parameters, and the accounting and checkpoint views.
#include <ATen/ATen.h>           // Tensor ops
#include <c10/util/Exception.h>  // TORCH_CHECK

#include <algorithm>  // std::fill, std::min
#include <cmath>      // std::sqrt

#include "parallel/parallel_context.h"  // ParallelContext
#include "zero/zero_optimizer.h"

namespace trident {

namespace {

/// Elementwise work on flat buffers runs over chunks of this many elements, so that its
/// temporaries stay small and in cache instead of costing a fresh buffer of a whole bucket.
constexpr int64_t kChunk = ZeroOptimizer::kUpdateChunk;

int64_t nbytes(const at::Tensor& t) {
  return t.defined() ? t.numel() * static_cast<int64_t>(t.element_size()) : 0;
}

/// Adds Σ x² in float64 to `total` (a float64 scalar on x's device), over chunks (no
/// float64 copy of the whole tensor); on the device, without waiting for it.
void add_sum_of_squares(at::Tensor& total, const at::Tensor& x) {
  if (x.scalar_type() == at::kDouble) {
    total.add_(at::dot(x, x));
    return;
  }
  if (x.scalar_type() == at::kFloat && x.is_cpu() && x.is_contiguous()) {
    total.add_(sum_of_squares(x.view({-1})));  // one pass, no float64 copies
    return;
  }
  for (int64_t i = 0; i < x.numel(); i += kChunk) {
    const at::Tensor c = x.narrow(0, i, std::min(kChunk, x.numel() - i)).to(at::kDouble);
    total.add_(at::dot(c, c));
  }
}

}  // namespace

at::Tensor ZeroOptimizer::bucket_sum_of_squares(const Group& g, size_t b,
                                                const at::Tensor& shard) const {
  // Every stage counts the dp shard it owns, so dp replicas count each element once (an
  // expert's replicas: its expert-dp group).
  const Range mine = g.layout.shard(b, g.dp->rank());
  at::Tensor sum = at::zeros({1}, at::TensorOptions().dtype(at::kDouble).device(device_));
  for (size_t k : g.layout.buckets()[b].params) {
    const ParamSpec& spec = params_[g.params[k]].spec;
    if (spec.tied_copy) continue;                                  // counted on the first stage
    if (!is_primary_copy(spec.shard, ctx_.tp().rank())) continue;  // counted on one tp rank
    const Range part = g.layout.param_part(k, mine);
    if (part.size() == 0) continue;
    add_sum_of_squares(sum, shards_grads() ? shard.narrow(0, part.begin - mine.begin, part.size())
                                           : g.grad.narrow(0, part.begin, part.size()));
  }
  return sum;
}

double ZeroOptimizer::grad_norm() {
  wait_pending();
  // One float64 sum on the parameters' device, read once after the all-reduce: bucket
  // after bucket, each bucket's own sum added (the tier's buckets summed as their last
  // gradient was written, so that the norm does not read the gradient plane again).
  at::Tensor sum_sq = at::zeros({1}, at::TensorOptions().dtype(at::kDouble).device(device_));
  for (Group& g : groups_)
    for (size_t b = 0; b < g.layout.buckets().size(); ++b)
      sum_sq.add_(
          g.grad_sq.empty() || !g.grad_sq[b].defined()
              ? bucket_sum_of_squares(g, b, shards_grads() ? grad_shard_of(g, b) : at::Tensor())
              : g.grad_sq[b]);
  ctx_.world().all_reduce(sum_sq, ReduceOp::kSum)->wait();
  return std::sqrt(sum_sq.item<double>());
}

void ZeroOptimizer::step(double lr, double grad_scale) {
  wait_pending();
  if (gatherer_) gatherer_->release_all();  // gathered copies would go stale
  ++step_count_;
  if (muon_) muon_step(lr, grad_scale);
  for (Group& g : groups_) {
    if (g.muon) continue;  // updated by muon_step
    if (g.tier && states_in_tier_) {
      stream_update(g, lr, grad_scale);
      continue;
    }
    for (size_t b = 0; b < g.layout.buckets().size(); ++b) update_bucket(g, b, lr, grad_scale);
  }
  all_gather_params();
  reset_gradients();
}

void ZeroOptimizer::skip_step() {
  wait_pending();
  if (gatherer_) gatherer_->release_all();  // stage 3 gathers afresh next step either way
  reset_gradients();
}

void ZeroOptimizer::reset_gradients() {
  if (embedding_rows_) embedding_rows_->clear();
  for (Group& g : groups_) {
    if (g.grad.defined()) g.grad.zero_();
    if (g.grad_shard.defined()) g.grad_shard.zero_();
    std::fill(g.launched.begin(), g.launched.end(), false);
    std::fill(g.grad_stored.begin(), g.grad_stored.end(), false);  // the tier's plane is stale
    std::fill(g.grad_sq.begin(), g.grad_sq.end(), at::Tensor());
  }
}

void ZeroOptimizer::update_bucket(Group& g, size_t b, double lr, double grad_scale) {
  const int64_t so = state_offset(g, b);
  const int64_t n = domain(g, b).size();
  at::Tensor param = params_in_domain(g, b);
  at::Tensor master = g.master.defined() ? g.master.narrow(0, so, n) : param;
  at::Tensor grad = g.grad_plane >= 0 ? grad_shard_of(g, b) : at::Tensor();
  update_range(g, b, 0, n, master, g.exp_avg.narrow(0, so, n), g.exp_avg_sq.narrow(0, so, n), param,
               grad, lr, grad_scale);
}

void ZeroOptimizer::update_range(Group& g, size_t b, int64_t begin, int64_t n, at::Tensor master,
                                 at::Tensor exp_avg, at::Tensor exp_avg_sq, at::Tensor param,
                                 at::Tensor grad, double lr, double grad_scale) {
  const Range dom = domain(g, b);
  const Range range{dom.begin + begin, dom.begin + begin + n};  // buffer coordinates
  const int64_t so = state_offset(g, b) + begin;
  if (!grad.defined())
    grad = shards_grads() ? g.grad_shard.narrow(0, so, n) : g.grad.narrow(0, range.begin, n);
  // Decoupled weight decay, on the parts of decayed parameters inside the range.
  if (adamw_.weight_decay != 0.0) {
    for (size_t k : g.layout.buckets()[b].params) {
      if (!params_[g.params[k]].spec.weight_decay) continue;
      const Range part = g.layout.param_part(k, range);
      if (part.size() > 0)
        master.narrow(0, part.begin - range.begin, part.size())
            .mul_(1.0 - lr * adamw_.weight_decay);
    }
  }
  // The chunks start at the range's start: callers pass ranges that begin at whole
  // chunks of the domain, so every element sees the same kernels as in one pass.
  adam_update_chunks(master.narrow(0, 0, n), grad, exp_avg, exp_avg_sq, lr, step_count_, grad_scale,
                     adamw_, kChunk);
  if (has_master()) param.copy_(master);  // round the fp32 master to the param dtype
}

void ZeroOptimizer::all_gather_params() {
  if (zero_.stage == 0) return;
  for (Group& g : groups_) {
    Communicator& dp = *g.dp;
    if (!g.data.defined() || dp.size() == 1) continue;  // stage 3 gathers on use instead
    for (size_t b = 0; b < g.layout.buckets().size(); ++b) {
      const Bucket& bucket = g.layout.buckets()[b];
      const Range mine = g.layout.shard(b, dp.rank());
      // The input must not lie inside the output: send a copy of this rank's shard.
      at::Tensor shard = g.data.narrow(0, mine.begin, mine.size()).clone();
      at::Tensor full = g.data.narrow(0, bucket.offset, bucket.numel);
      pending_.push_back({dp.all_gather(full, shard), nullptr, -1});
    }
  }
  wait_pending();
}

ModelStateBytes ZeroOptimizer::bytes() const {
  ModelStateBytes out;
  for (const Group& g : groups_) {
    out.parameters += nbytes(g.data) + nbytes(g.param_shard);
    out.gradients += nbytes(g.grad) + nbytes(g.grad_shard);
    out.optimizer_states += nbytes(g.master) + nbytes(g.exp_avg) + nbytes(g.exp_avg_sq);
  }
  for (const Slot& s : slots_) out.gradients += nbytes(s.input) + nbytes(s.output);
  out.gradients += nbytes(grad_staging_);
  if (ring_)  // the nvme tier's ring holds the states of the pieces in flight
    for (const AlignedBuffer& b : ring_->buffers)
      out.optimizer_states += static_cast<int64_t>(b.size());
  return out;
}

ParamStateView ZeroOptimizer::param_state(size_t i) const {
  TORCH_CHECK(i < params_.size(), "param_state: index ", i, " out of range (", params_.size(),
              " parameters)");
  const auto [gi, k] = where_[i];
  const Group& g = groups_[gi];
  TORCH_CHECK(!states_in_tier_,
              "param_state: the optimizer states are in the nvme tier; "
              "visit_states() reads and writes them window by window");
  const ParamPlace& place = g.layout.places()[k];
  const Range dom = domain(g, place.bucket);
  const Range part = g.layout.param_part(k, dom);
  ParamStateView view;
  if (part.size() == 0) {
    const auto opts = at::TensorOptions().dtype(state_dtype_).device(device_);
    view.master = at::empty({0}, g.master.defined() ? opts : opts.dtype(param_dtype_));
    view.exp_avg = at::empty({0}, opts);
    if (!g.muon) view.exp_avg_sq = at::empty({0}, opts);
    view.param = at::empty({0}, opts.dtype(param_dtype_));
    return view;
  }
  view.start = part.begin - place.offset;
  view.length = part.size();
  const int64_t so = state_offset(g, place.bucket) + part.begin - dom.begin;
  view.param = g.data.defined() ? g.data.narrow(0, part.begin, view.length)
                                : g.param_shard.narrow(0, so, view.length);
  view.master = g.master.defined() ? g.master.narrow(0, so, view.length) : view.param;
  view.exp_avg = g.exp_avg.narrow(0, so, view.length);
  if (g.exp_avg_sq.defined()) view.exp_avg_sq = g.exp_avg_sq.narrow(0, so, view.length);
  return view;
}

void ZeroOptimizer::reload_master_from_params_of(Group& g) {
  if (!g.master.defined()) return;
  for (size_t b = 0; b < g.layout.buckets().size(); ++b) {
    g.master.narrow(0, state_offset(g, b), domain(g, b).size()).copy_(params_in_domain(g, b));
  }
}

at::Tensor ZeroOptimizer::params_in_domain(Group& g, size_t b) const {
  const Range dom = domain(g, b);
  if (g.data.defined()) return g.data.narrow(0, dom.begin, dom.size());
  return g.param_shard.narrow(0, state_offset(g, b), dom.size());
}

int64_t ZeroOptimizer::numel() const {
  int64_t n = 0;
  for (const Group& g : groups_) n += g.layout.data_numel();
  return n;
}

int64_t ZeroOptimizer::padded_numel() const {
  int64_t n = 0;
  for (const Group& g : groups_) n += g.layout.numel();
  return n;
}

}  // namespace trident
