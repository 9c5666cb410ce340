// ZeroOptimizer, backward side: building the flat buffers, the gradient-ready hooks on
// each parameter's AccumulateGrad node, and the bucketed dp reductions they launch.
#include "zero/zero_optimizer.h"

#include <ATen/ATen.h>                          // at::zeros, Tensor ops
#include <c10/util/Exception.h>                 // TORCH_CHECK
#include <torch/csrc/autograd/function.h>       // torch::autograd::Node
#include <torch/csrc/autograd/function_hook.h>  // FunctionPostHook
#include <torch/csrc/autograd/variable.h>       // impl::grad_accumulator

#include <algorithm>  // std::fill

#include "parallel/parallel_context.h"  // ParallelContext
#include "zero/buffer_assignment.h"     // assign_buffers, kPersistentBuffer
#include "zero/muon_exchange.h"         // MuonExchange, for the destructor

namespace trident {

namespace {

bool is_16_bit(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

}  // namespace

/// Runs after autograd has accumulated a parameter's gradient for this backward. A post
/// hook on the AccumulateGrad node (rather than a tensor hook, which runs before the
/// accumulation) sees the final .grad, so stage 2 can copy it out and drop it.
class GradReadyHook : public torch::autograd::FunctionPostHook {
 public:
  GradReadyHook(ZeroOptimizer* optimizer, size_t param) : optimizer_(optimizer), param_(param) {}
  torch::autograd::variable_list operator()(const torch::autograd::variable_list& outputs,
                                            const torch::autograd::variable_list&) override {
    optimizer_->on_grad_ready(param_);
    return outputs;
  }

 private:
  ZeroOptimizer* optimizer_;
  size_t param_;
};

ZeroOptimizer::ZeroOptimizer(std::vector<Parameter>& params, ParallelContext& ctx,
                             const ZeroOptions& zero, const AdamWOptions& adamw,
                             const std::vector<std::vector<size_t>>& units)
    : params_(params), ctx_(ctx), zero_(zero), adamw_(adamw) {
  TORCH_CHECK(zero.stage >= 0 && zero.stage <= 3, "zero.stage = ", zero.stage,
              " is not supported; use 0, 1, 2 or 3");
  TORCH_CHECK(zero.reduce_dtype == at::kFloat || zero.reduce_dtype == at::kBFloat16,
              "zero.reduce_dtype must be float32 or bfloat16, got ", zero.reduce_dtype);
  TORCH_CHECK(!zero.draw_seed || zero.stage == 3,
              "ZeroOptimizer: parameters without values need stage 3, which draws them");
  param_dtype_ = params.empty() ? at::kFloat : params.front().tensor.scalar_type();
  if (!params.empty()) device_ = params.front().tensor.device();
  for (const Parameter& p : params) {
    TORCH_CHECK(p.tensor.scalar_type() == param_dtype_, "ZeroOptimizer: parameter ", p.spec.name,
                " is ", p.tensor.scalar_type(), " but the others are ", param_dtype_,
                "; a stage's parameters share one dtype");
    TORCH_CHECK(p.tensor.device() == device_, "ZeroOptimizer: parameter ", p.spec.name, " is on ",
                p.tensor.device(), " but the others are on ", device_);
    TORCH_CHECK(p.tensor.requires_grad() && p.tensor.is_leaf(), "ZeroOptimizer: parameter ",
                p.spec.name, " must be a leaf that requires grad");
  }
  TORCH_CHECK(param_dtype_ == at::kDouble || param_dtype_ == at::kFloat || is_16_bit(param_dtype_),
              "ZeroOptimizer: unsupported parameter dtype ", param_dtype_);
  state_dtype_ = param_dtype_ == at::kDouble ? at::kDouble : at::kFloat;
  transport_dtype_ = is_16_bit(param_dtype_) ? zero.reduce_dtype : param_dtype_;

  // Group 0: the tied embedding, alone, so its dp partition is the same on the first and
  // the last stage. Group 1: everything else, but in stage 3 the small parameters, which
  // group 2 keeps whole, and the routed experts, groups 3 and 4, reduced and sharded over
  // the expert-dp group (see zero/buffer_assignment.h).
  std::vector<int64_t> numels;
  for (const Parameter& p : params) numels.push_back(p.tensor.numel());
  const auto assigned =
      assign_buffers(params, numels, zero.stage, zero.persist_below, zero.muon.enabled);
  groups_.resize(assigned.size());
  where_.resize(params.size());
  for (size_t gi = 0; gi < assigned.size(); ++gi) {
    groups_[gi].params = assigned[gi];
    groups_[gi].muon = is_muon_buffer(gi);
    groups_[gi].dp = is_expert_buffer(gi) ? &ctx.expert_dp() : &ctx.dp();
    for (size_t k = 0; k < assigned[gi].size(); ++k) where_[assigned[gi][k]] = {gi, k};
  }
  for (size_t gi = 0; gi < groups_.size(); ++gi)
    build_group(groups_[gi], zero, zero.stage < 3 || is_persistent_buffer(gi));

  if (shards_grads()) {
    // Two bucket buffers for the buckets of several parameters: one being filled while
    // the previous one's reduce-scatter runs. A bucket of one parameter (the embedding,
    // any parameter larger than bucket_size) is sent from its own gradient instead, so
    // the buffers stay about bucket_size however large the largest parameter is.
    int64_t max_bucket = 0, max_shard = 0;
    for (const Group& g : groups_)
      for (const Bucket& b : g.layout.buckets())
        if (b.params.size() > 1 && g.dp->size() > 1) {
          max_bucket = std::max(max_bucket, b.numel);
          max_shard = std::max(max_shard, b.shard_numel);
        }
    const auto opts = at::TensorOptions().dtype(transport_dtype_).device(device_);
    if (max_bucket > 0)
      for (int s = 0; s < kSlots; ++s)
        slots_.push_back({at::zeros({max_bucket}, opts), at::zeros({max_shard}, opts)});
  }

  seen_.assign(params.size(), false);
  for (size_t i = 0; i < params.size(); ++i) {
    // The node is held weakly by the parameter: keep it alive so the hook stays.
    std::shared_ptr<torch::autograd::Node> acc =
        torch::autograd::impl::grad_accumulator(params[i].tensor);
    TORCH_CHECK(acc, "ZeroOptimizer: parameter ", params[i].spec.name, " has no grad accumulator");
    hook_keys_.push_back(acc->add_post_hook(std::make_unique<GradReadyHook>(this, i)));
    accumulators_.push_back(std::move(acc));
  }
  // Only now: the accumulators record each parameter's whole shape, which autograd checks
  // every gradient against, and stage 3 is about to empty the parameters.
  if (zero.stage == 3) shard_params(units);
  // The embedding's rows travel apart in stages 1 and 2, whose reductions are the
  // communicator's point-to-point ring and advance at every hook's poll. Stage 0's bucket
  // goes through one all-reduce, which the MPI library advances only inside its own calls:
  // posted at the start of backward it stalled for seconds in measured steps (docs/zero.md).
  // Stage 0 with one dp rank reduces nothing: its rows are folded in like stage 1's, and
  // the lookup's dense gradient (a buffer of every row, and a pass to add it) goes.
  const bool reduced_by_ring = zero.stage == 1 || zero.stage == 2;
  const bool unreduced = zero.stage == 0 && !groups_.empty() && groups_[0].dp->size() == 1;
  if ((reduced_by_ring || unreduced) && !groups_[0].params.empty())
    embedding_rows_ = std::make_unique<EmbeddingRows>();
  if (zero.offload.optimizer) init_tier();
  if (zero.muon.enabled) init_muon();
}

void ZeroOptimizer::shard_params(const std::vector<std::vector<size_t>>& units) {
  // Each rank keeps its shard of every bucket; the whole buffer it was cut from goes.
  std::vector<ShardedBuffer> buffers;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Group& g = groups_[gi];
    if (is_persistent_buffer(gi)) continue;  // whole on every rank, as in stage 2
    const int dp_rank = g.dp->rank();
    const auto opts = at::TensorOptions().dtype(param_dtype_).device(device_);
    // Drawn parameters headed for the tier are drawn there, piece by piece (init_tier).
    if (!zero_.draw_seed || !zero_.offload.params)
      g.param_shard = at::empty({g.layout.shard_space_numel()}, opts);
    for (size_t b = 0; b < g.layout.buckets().size() && g.param_shard.defined(); ++b) {
      const Range mine = g.layout.shard(b, dp_rank);
      at::Tensor dst = g.param_shard.narrow(0, g.layout.shard_space_offset(b), mine.size());
      if (zero_.draw_seed) {
        draw_domain(g, b, 0, mine.size(), dst);
      } else {
        dst.copy_(g.data.narrow(0, mine.begin, mine.size()));
      }
    }
    g.data = at::Tensor();
    if (zero_.draw_seed) reload_master_from_params_of(g);
    ShardedBuffer buffer{&g.layout, at::empty({0}, opts), g.params, nullptr, g.dp};
    if (g.param_shard.defined()) buffer.shard = g.param_shard;
    if (zero_.offload.params) {
      // The shard moves to the nvme tier (init_tier); gathers read it from there.
      buffer.shard = at::empty({0}, opts);
      buffer.load = [this, gi](size_t b, at::Tensor dst) { return post_param_load(gi, b, dst); };
    }
    buffers.push_back(std::move(buffer));
  }
  gatherer_ =
      std::make_unique<ParamGatherer>(params_, std::move(buffers), ctx_.dp(), units, zero_.gather);
}

void ZeroOptimizer::gather_params() {
  if (gatherer_) gatherer_->gather_all();
}

void ZeroOptimizer::release_params() {
  if (gatherer_) gatherer_->release_all();
}

ZeroOptimizer::~ZeroOptimizer() {
  // In-flight operations write into our buffers: let them finish before freeing them.
  for (Pending& p : pending_) p.work->wait();
  try {
    finish_grad_writes();
  } catch (...) {  // the run is ending on an error already; the writes have landed
  }
  for (size_t i = 0; i < accumulators_.size(); ++i) accumulators_[i]->del_post_hook(hook_keys_[i]);
}

void ZeroOptimizer::build_group(Group& g, const ZeroOptions& zero, bool whole) {
  std::vector<int64_t> numels;
  for (size_t p : g.params) numels.push_back(params_[p].tensor.numel());
  g.layout = BucketLayout(numels, zero.bucket_size, g.dp->size());
  const auto opts = at::TensorOptions().dtype(param_dtype_).device(device_);
  // Drawn parameters of a sharded buffer never exist whole: shard_params draws the shard.
  const bool drawn = zero.draw_seed.has_value();
  if (whole || !drawn) {
    g.data = at::zeros({g.layout.numel()}, opts);
    for (size_t k = 0; k < g.params.size(); ++k) {
      const Parameter& p = params_[g.params[k]];
      at::Tensor t = p.tensor;
      const ParamPlace& place = g.layout.places()[k];
      at::Tensor view = g.data.narrow(0, place.offset, place.numel).view(t.sizes());
      if (drawn) {
        view.copy_(init_shard(p.spec, *zero.draw_seed, ctx_.tp().rank(), ctx_.tp().size()));
      } else {
        view.copy_(t.detach());
      }
      t.set_data(view);  // the same TensorImpl, so every module holding it sees the buffer
    }
  }
  if (zero.stage < 2) g.grad = at::zeros({g.layout.numel()}, opts);
  // Stage 3 cuts the rank's parameter shard out of g.data (or draws it) once the hooks
  // are in place.

  // With the nvme tier the states and the gradient shard are never whole in memory:
  // init_tier writes them.
  if (!zero.offload.optimizer) allocate_states(g);
  if (zero.stage >= 2 && !zero.offload.optimizer) {
    const int64_t domain_numel = zero.stage == 0 ? g.layout.numel() : g.layout.shard_space_numel();
    g.grad_shard =
        at::zeros({domain_numel}, at::TensorOptions().dtype(state_dtype_).device(device_));
  }
  g.launched.assign(g.layout.buckets().size(), false);
  g.ready.assign(g.layout.buckets().size(), 0);
  g.grad_stored.assign(g.layout.buckets().size(), false);
  g.grad_sq.assign(g.layout.buckets().size(), at::Tensor());
  if (g.data.defined()) reload_master_from_params_of(g);
  attach_grad_views_of(g);
}

void ZeroOptimizer::draw_domain(const Group& g, size_t b, int64_t begin, int64_t n,
                                at::Tensor dst) const {
  const Range dom = domain(g, b);
  const Range range{dom.begin + begin, dom.begin + begin + n};  // buffer coordinates
  dst.zero_();                                                  // the buffer's padding
  for (size_t k : g.layout.buckets()[b].params) {
    const Range part = g.layout.param_part(k, range);
    if (part.size() == 0) continue;
    const int64_t start = part.begin - g.layout.places()[k].offset;  // in the parameter
    dst.narrow(0, part.begin - range.begin, part.size())
        .copy_(init_range(params_[g.params[k]].spec, *zero_.draw_seed, ctx_.tp().rank(),
                          ctx_.tp().size(), start, part.size()));
  }
}

at::Tensor ZeroOptimizer::grad_shard_of(Group& g, size_t b) {
  const int64_t n = domain(g, b).size();
  if (g.grad_plane < 0) return g.grad_shard.narrow(0, state_offset(g, b), n);
  // The buffer's last writes must be out before it is filled again, and a read of the
  // plane must not overtake a write to it.
  finish_grad_writes();
  // One aligned buffer for every bucket, reused: a fresh one per call would leave holes
  // of a bucket's size in the heap, which the activations allocated in between split.
  if (grad_staging_.numel() < n) grad_staging_ = staging_->take(n, state_dtype_);
  at::Tensor shard = grad_staging_.narrow(0, 0, n);
  if (!g.grad_stored[b]) return shard.zero_();
  g.tier->finish_all(post_bucket(g, b, g.grad_plane, shard, false));
  return shard;
}

void ZeroOptimizer::change_grad_shard(Group& g, size_t b,
                                      const std::function<void(at::Tensor&)>& change) {
  at::Tensor shard = grad_shard_of(g, b);
  change(shard);
  if (g.grad_plane < 0) return;
  // The last micro-batch's sum is the step's gradient: its share of the norm is taken
  // now, while the shard is at hand, instead of by reading the plane back for the norm.
  g.grad_sq[b] = last_backward_ ? bucket_sum_of_squares(g, b, shard) : at::Tensor();
  // Written behind: the writes land while backward goes on; the next grad_shard_of (or
  // the step) waits for them.
  for (uint64_t ticket : post_bucket(g, b, g.grad_plane, shard, true))
    grad_writes_.emplace_back(g.tier.get(), ticket);
  g.grad_stored[b] = true;
}

void ZeroOptimizer::allocate_states(Group& g) {
  const int64_t domain_numel = zero_.stage == 0 ? g.layout.numel() : g.layout.shard_space_numel();
  const auto state = at::TensorOptions().dtype(state_dtype_).device(device_);
  g.exp_avg = at::zeros({domain_numel}, state);
  if (!g.muon) g.exp_avg_sq = at::zeros({domain_numel}, state);
  if (has_master()) g.master = at::zeros({domain_numel}, state);
}

bool ZeroOptimizer::has_master() const { return is_16_bit(param_dtype_); }

void ZeroOptimizer::attach_grad_views_of(Group& g) {
  if (!g.grad.defined()) return;
  for (size_t k = 0; k < g.params.size(); ++k) {
    at::Tensor& t = params_[g.params[k]].tensor;
    const ParamPlace& place = g.layout.places()[k];
    at::Tensor view = g.grad.narrow(0, place.offset, place.numel).view(t.sizes());
    const at::Tensor& current = t.grad();
    if (!current.defined() || current.data_ptr() != view.data_ptr()) {
      if (current.defined()) view.add_(current);  // keep what was accumulated elsewhere
      t.mutable_grad() = view;
    }
  }
}

Range ZeroOptimizer::domain(const Group& g, size_t b) const {
  const Bucket& bucket = g.layout.buckets()[b];
  if (zero_.stage == 0) return {bucket.offset, bucket.offset + bucket.numel};
  return g.layout.shard(b, g.dp->rank());
}

int64_t ZeroOptimizer::state_offset(const Group& g, size_t b) const {
  return zero_.stage == 0 ? g.layout.buckets()[b].offset : g.layout.shard_space_offset(b);
}

void ZeroOptimizer::begin_backward(bool last) {
  in_backward_ = true;
  reduce_in_backward_ = shards_grads() || last;
  last_backward_ = last;
  std::fill(seen_.begin(), seen_.end(), false);
  for (Group& g : groups_) {
    std::fill(g.ready.begin(), g.ready.end(), 0);
    if (shards_grads()) std::fill(g.launched.begin(), g.launched.end(), false);
    attach_grad_views_of(g);
  }
  poll();
}

void ZeroOptimizer::on_grad_ready(size_t param) {
  poll();  // MPI's non-blocking collectives advance only inside MPI calls
  if (!in_backward_ || !reduce_in_backward_ || seen_[param]) return;
  seen_[param] = true;
  const auto [gi, k] = where_[param];
  Group& g = groups_[gi];
  const size_t b = g.layout.places()[k].bucket;
  if (++g.ready[b] == static_cast<int>(g.layout.buckets()[b].params.size()) && !g.launched[b])
    launch(gi, b);
}

void ZeroOptimizer::end_backward() {
  if (in_backward_ && reduce_in_backward_) {
    // Buckets with a parameter that got no gradient in this backward (unused here).
    for (size_t gi = 0; gi < groups_.size(); ++gi)
      for (size_t b = 0; b < groups_[gi].launched.size(); ++b)
        if (!groups_[gi].launched[b]) launch(gi, b);
  }
  in_backward_ = false;
  // Layers whose backward ends at the stage's input (the first stage's embeddings) are
  // released here; nothing stays gathered between micro-batches.
  if (gatherer_) gatherer_->end_micro_batch();
  poll();
}

void ZeroOptimizer::launch(size_t gi, size_t b) {
  Group& g = groups_[gi];
  g.launched[b] = true;
  if (shards_grads()) {
    launch_sharded_grads(gi, b);
    return;
  }
  Communicator& dp = *g.dp;
  if (dp.size() == 1) return;  // the local gradient is already the sum
  const Bucket& bucket = g.layout.buckets()[b];
  at::Tensor grads = g.grad.narrow(0, bucket.offset, bucket.numel);  // (bucket) param dtype
  if (zero_.stage == 0) {
    pending_.push_back({dp.all_reduce(grads, ReduceOp::kSum), nullptr, -1});
    return;
  }
  // Stage 1: only this rank's shard of the sum is needed; it lands in place after the
  // collective completes (MPI forbids an output inside the input).
  const Range mine = g.layout.shard(b, dp.rank());
  at::Tensor out = at::empty({bucket.shard_numel}, grads.options());
  at::Tensor dst = g.grad.narrow(0, mine.begin, mine.size());
  pending_.push_back({dp.reduce_scatter(out, grads, ReduceOp::kSum),
                      [dst, out]() mutable { dst.copy_(out); }, -1});
}

void ZeroOptimizer::launch_sharded_grads(size_t gi, size_t b) {
  Group& g = groups_[gi];
  Communicator& dp = *g.dp;
  const Bucket& bucket = g.layout.buckets()[b];
  if (dp.size() == 1) {
    change_grad_shard(g, b, [&](at::Tensor& shard) {
      for (size_t k : bucket.params) {
        at::Tensor& t = params_[g.params[k]].tensor;
        if (!t.grad().defined()) continue;
        const ParamPlace& place = g.layout.places()[k];
        shard.narrow(0, place.offset - bucket.offset, place.numel).add_(t.grad().reshape({-1}));
        t.mutable_grad().reset();
      }
    });
    return;
  }
  // At most kSlots reductions in flight, so the buffers they read stay bounded.
  while (static_cast<int>(pending_.size()) >= kSlots) retire_front();
  if (bucket.params.size() == 1) {
    launch_single_param(gi, b);
    return;
  }
  const int s = acquire_slot();
  at::Tensor in = slots_[s].input.narrow(0, 0, bucket.numel);          // (bucket)
  at::Tensor out = slots_[s].output.narrow(0, 0, bucket.shard_numel);  // (bucket / dp)
  for (size_t k : bucket.params) {
    at::Tensor& t = params_[g.params[k]].tensor;
    const ParamPlace& place = g.layout.places()[k];
    at::Tensor dst = in.narrow(0, place.offset - bucket.offset, place.numel);
    if (t.grad().defined()) {
      dst.copy_(t.grad().reshape({-1}));
      t.mutable_grad().reset();  // the full-size gradient is not kept
    } else {
      dst.zero_();
    }
  }
  if (bucket.numel > bucket.data_numel)
    in.narrow(0, bucket.data_numel, bucket.numel - bucket.data_numel).zero_();
  pending_.push_back({dp.reduce_scatter(out, in, ReduceOp::kSum),
                      [this, gi, b, out]() {
                        change_grad_shard(groups_[gi], b, [&](at::Tensor& s) { s.add_(out); });
                      },
                      s});
}

void ZeroOptimizer::launch_single_param(size_t gi, size_t b) {
  Group& g = groups_[gi];
  const Bucket& bucket = g.layout.buckets()[b];
  at::Tensor& t = params_[g.params[bucket.params.front()]].tensor;
  at::Tensor in;  // (bucket) transport dtype: the gradient itself when it already fits
  if (t.grad().defined() && bucket.numel == bucket.data_numel) {
    in = t.grad().reshape({-1}).to(transport_dtype_).contiguous();
  } else {
    in = at::zeros({bucket.numel}, at::TensorOptions().dtype(transport_dtype_).device(device_));
    if (t.grad().defined()) in.narrow(0, 0, bucket.data_numel).copy_(t.grad().reshape({-1}));
  }
  t.mutable_grad().reset();  // the communicator keeps `in` alive until the reduction ends
  at::Tensor out = at::empty({bucket.shard_numel}, in.options());
  pending_.push_back({g.dp->reduce_scatter(out, in, ReduceOp::kSum),
                      [this, gi, b, out]() {
                        change_grad_shard(groups_[gi], b, [&](at::Tensor& s) { s.add_(out); });
                      },
                      -1});
}

int ZeroOptimizer::acquire_slot() {
  const int s = next_slot_;
  next_slot_ = (next_slot_ + 1) % kSlots;
  // Retire in posting order up to the slot's previous user, so that the sums into the
  // gradient shard happen in the same order on every run.
  auto uses_slot = [s](const Pending& p) { return p.slot == s; };
  while (std::any_of(pending_.begin(), pending_.end(), uses_slot)) retire_front();
  return s;
}

void ZeroOptimizer::retire_front() {
  Pending p = std::move(pending_.front());
  pending_.erase(pending_.begin());
  p.work->wait();
  if (p.on_done) p.on_done();
}

void ZeroOptimizer::poll() {
  while (!pending_.empty() && pending_.front().work->test()) retire_front();
}

void ZeroOptimizer::wait_pending() {
  while (!pending_.empty()) retire_front();
}

void ZeroOptimizer::reduce_gradients() {
  // Gradients that no hook handed over (a backward outside begin/end_backward).
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Group& g = groups_[gi];
    for (size_t b = 0; b < g.launched.size(); ++b) {
      if (!shards_grads()) {
        if (!g.launched[b]) launch(gi, b);
        continue;
      }
      for (size_t k : g.layout.buckets()[b].params) {
        if (params_[g.params[k]].tensor.grad().defined()) {
          launch(gi, b);
          break;
        }
      }
    }
  }
  in_backward_ = false;
  if (gatherer_) gatherer_->release_all();  // layers kept gathered through the step
  wait_pending();
  fold_embedding_rows();
  reduce_tied_embedding();
}

void ZeroOptimizer::fold_embedding_rows() {
  if (!embedding_rows_ || embedding_rows_->empty()) return;
  Group& g = groups_[0];  // one parameter, hence one bucket, at offset 0 of the buffer
  const at::Tensor& weight = params_[g.params.front()].tensor;  // (V/tp, C)
  const Range dom = domain(g, 0);
  auto fold = [&](at::Tensor& dst) {
    embedding_rows_->fold_into(dst, dom.begin, weight.size(0), weight.size(1), *g.dp);
  };
  if (shards_grads()) {
    change_grad_shard(g, 0, fold);
  } else {
    at::Tensor dst = g.grad.narrow(0, dom.begin, dom.size());
    fold(dst);
  }
}

void ZeroOptimizer::reduce_tied_embedding() {
  Communicator* embedding = ctx_.embedding();
  Group& g = groups_[0];
  if (embedding == nullptr || embedding->size() == 1 || g.params.empty()) return;
  // The group holds one parameter, hence one bucket, padded identically on both stages:
  // each rank sums exactly the dp shard it owns with its peer's on the other stage.
  auto sum = [&](at::Tensor& grads) { embedding->all_reduce(grads, ReduceOp::kSum)->wait(); };
  if (zero_.stage == 0) {
    sum(g.grad);
  } else if (zero_.stage == 1) {
    const Range mine = g.layout.shard(0, g.dp->rank());
    at::Tensor grads = g.grad.narrow(0, mine.begin, mine.size());
    sum(grads);
  } else {
    change_grad_shard(g, 0, sum);
  }
}

}  // namespace trident
