// Routing, the experts and the auxiliary losses of the Mixture-of-Experts MLP.
#include "models/moe.h"

#include <ATen/ATen.h>
#include <torch/autograd.h>  // torch::autograd::Function

#include <cmath>  // std::ceil

#include "models/expert_parallel.h"  // run_experts_over_ep
#include "parallel/communicator.h"

namespace trident {

namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

/// Returns x unchanged; its backward also hands `loss` the gradient `scale`, so that the
/// scalar loss joins the objective wherever the layer's output goes (the next layer, a
/// pipeline send): no stage needs to return it.
struct AttachLoss : torch::autograd::Function<AttachLoss> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& x, const at::Tensor& loss,
                            double scale) {
    ctx->saved_data["scale"] = scale;
    ctx->saved_data["dtype"] = static_cast<int64_t>(loss.scalar_type());
    return x.view_as(x);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const double scale = ctx->saved_data["scale"].toDouble();
    const auto dtype = static_cast<at::ScalarType>(ctx->saved_data["dtype"].toInt());
    return {grads[0], at::full({}, scale, grads[0].options().dtype(dtype)), at::Tensor()};
  }
};

}  // namespace

MoeMlp::Expert MoeMlp::make_expert(ParamRegistry& params, Communicator& tp, const std::string& name,
                                   const std::string& module, int64_t hidden, double init_std,
                                   bool routed) {
  LinearOptions in{hidden, o_.ffn_hidden, init_std}, out{o_.ffn_hidden, hidden, init_std};
  in.bias = out.bias = false;
  in.expert = out.expert = routed;
  auto holder = std::make_shared<torch::nn::Module>();
  Expert e;
  e.gate = holder->register_module(
      "gate", std::make_shared<ColumnParallelLinear>(params, tp, name + ".gate", in));
  e.up = holder->register_module(
      "up", std::make_shared<ColumnParallelLinear>(params, tp, name + ".up", in));
  e.down = holder->register_module(
      "down", std::make_shared<RowParallelLinear>(params, tp, name + ".down", out));
  register_module(module, holder);
  return e;
}

at::Tensor MoeMlp::Expert::forward(const at::Tensor& x) const {
  return down->forward(at::silu(gate->forward(x)) * up->forward(x));
}

MoeMlp::MoeMlp(ParamRegistry& params, Communicator& tp, Communicator* ep, const std::string& prefix,
               int64_t hidden, const MoeOptions& o, double init_std)
    : o_(o), ep_(ep != nullptr && ep->size() > 1 ? ep : nullptr) {
  router_ = register_parameter("router", params.create({prefix + "router.weight",
                                                        {o.experts, hidden},
                                                        ShardSpec{},
                                                        InitKind::kNormal,
                                                        init_std,
                                                        -1,
                                                        /*weight_decay=*/true}));
  TORCH_CHECK(o.cp == nullptr || o.cp->size() == 1 || o.capacity_factor == 0,
              "moe: a capacity per sequence does not run with context parallelism");
  const int64_t ranks = ep_ ? ep_->size() : 1, here = o.experts / ranks;
  TORCH_CHECK(o.experts % ranks == 0, "moe: ", o.experts,
              " experts do not split over ep = ", ranks);
  const int64_t first = ep_ ? ep_->rank() * here : 0;
  for (int64_t j = first; j < first + here; ++j)
    experts_.push_back(make_expert(params, tp, prefix + "experts." + std::to_string(j),
                                   "expert_" + std::to_string(j), hidden, init_std, true));
  if (o.shared_expert)
    shared_ = make_expert(params, tp, prefix + "shared", "shared", hidden, init_std, false);
}

std::vector<at::Tensor> MoeMlp::run_experts(const std::vector<at::Tensor>& inputs) {
  if (ep_) {
    return run_experts_over_ep(*ep_, inputs, [this](int64_t j, const at::Tensor& x) {
      return experts_[static_cast<size_t>(j)].forward(x);
    });
  }
  std::vector<at::Tensor> outputs;
  for (size_t e = 0; e < inputs.size(); ++e) outputs.push_back(experts_[e].forward(inputs[e]));
  return outputs;
}

at::Tensor MoeMlp::forward(const at::Tensor& m, double loss_scale) {
  const int64_t B = m.size(0), T = m.size(1), C = m.size(2), N = B * T, E = o_.experts;
  const at::Tensor x = m.reshape({N, C});
  // The router in float32 at least (float64 runs keep float64).
  const at::ScalarType rt = x.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  const at::Tensor logits = at::matmul(x.to(rt), router_.to(rt).t());  // (N, E)
  // scores: what the chosen experts' weights are cut from; probs: each expert's share of a
  // token, as the balancing loss counts it; select: what the top k is taken of.
  at::Tensor scores, probs, select;
  if (o_.sigmoid) {
    scores = at::sigmoid(logits);
    probs = scores / scores.sum(-1, /*keepdim=*/true);
    select = bias_.defined() ? scores.detach() + bias_ : scores.detach();
  } else {
    scores = probs = at::softmax(logits, -1);
    select = probs.detach();
  }
  // The top k by a stable descending sort: equal values go to the lower index.
  const at::Tensor chosen =
      std::get<1>(at::sort(select, /*stable=*/true, /*dim=*/-1, /*descending=*/true))
          .narrow(1, 0, o_.top_k);  // (N, k)
  at::Tensor weights = scores.gather(1, chosen);
  weights = (weights / weights.sum(-1, /*keepdim=*/true)).to(x.scalar_type());  // (N, k)

  // Capacity per sequence: the first `capacity` of its tokens that chose an expert.
  const int64_t capacity =
      o_.capacity_factor > 0
          ? static_cast<int64_t>(std::ceil(o_.capacity_factor * static_cast<double>(T * o_.top_k) /
                                           static_cast<double>(E)))
          : N;
  // Per sequence, how many of its T k choices went to each expert: the load, and f below.
  const at::Tensor counts = at::zeros({B, E}, probs.options())
                                .scatter_add(1, chosen.reshape({B, T * o_.top_k}),
                                             at::ones({B, T * o_.top_k}, probs.options()));
  const bool training = at::GradMode::is_enabled();
  // Each expert's tokens (ascending) and their weights.
  std::vector<at::Tensor> rows, w, inputs;
  for (int64_t e = 0; e < E; ++e) {
    const at::Tensor hit = chosen == e;  // (N, k)
    at::Tensor taken = hit.any(1);       // (N): a token picks e at most once
    if (o_.capacity_factor > 0)
      taken = taken & (taken.view({B, T}).to(at::kLong).cumsum(1) <= capacity).view({N});
    rows.push_back(taken.nonzero().squeeze(1));
    if (training) dropped_ -= rows.back().size(0);  // its size is known here: no further wait
    w.push_back(weights.masked_fill(~hit, 0).sum(1).index_select(0, rows.back()));
    inputs.push_back(x.index_select(0, rows.back()));
  }
  const std::vector<at::Tensor> outputs = run_experts(inputs);
  // The combine: a token's expert outputs summed in increasing expert index.
  at::Tensor y = at::zeros_like(x);
  for (int64_t e = 0; e < E; ++e)
    y = y.index_add(0, rows[static_cast<size_t>(e)],
                    outputs[static_cast<size_t>(e)] * w[static_cast<size_t>(e)].unsqueeze(1));
  if (training) {
    dropped_ += N * o_.top_k;  // the choices made, less those taken
    const at::Tensor load = counts.sum(0).detach();
    load_sum_ = load_sum_.defined() ? load_sum_ + load : load;
  }
  // The shared expert last: after the routed ones, in the same order in every layout.
  if (shared_.gate) y = y + shared_.forward(x);
  y = y.view({B, T, C});
  if (o_.aux_loss_coeff == 0.0 && o_.z_loss_coeff == 0.0) return y;

  // Load balancing per sequence (DeepSeek-V3's sequence-wise form of Switch's loss), so that
  // no layout knob (micro-batch size, dp, pp, tp, cp) changes the model: for each sequence,
  // E * sum_e f_e P_e, f_e the fraction of its T k choices that went to e (no gradient),
  // P_e its tokens' mean probability of e; averaged over the step's sequences. With context
  // parallelism the sequence's choices are counted over its cp ranks, and each rank adds
  // its own tokens' part of P_e: the parts sum to the sequence's loss.
  at::Tensor sequence_counts = counts;
  int64_t length = T;  // the whole sequence's tokens
  if (o_.cp != nullptr && o_.cp->size() > 1) {
    sequence_counts = counts.clone();  // summed in place over the cp ranks
    o_.cp->all_reduce(sequence_counts)->wait();
    length = T * o_.cp->size();
  }
  const at::Tensor f = sequence_counts / static_cast<double>(length * o_.top_k);  // (B, E)
  const at::Tensor p = length == T ? probs.view({B, T, E}).mean(1)
                                   : probs.view({B, T, E}).sum(1) / static_cast<double>(length);
  // Scaled to the objective's units: loss_scale divides by the step's tokens, and a
  // sequence's loss counts once, its tokens' worth.
  at::Tensor loss = (o_.aux_loss_coeff * static_cast<double>(E * length)) * (f * p).sum();
  // The z-loss, the squared logsumexp of the router's logits, averaged over the step's tokens.
  if (o_.z_loss_coeff != 0.0)
    loss = loss + o_.z_loss_coeff * at::logsumexp(logits, -1).pow(2).sum();
  if (training) {
    const at::Tensor share = loss.detach() * loss_scale;
    aux_sum_ = aux_sum_.defined() ? aux_sum_ + share : share;
  }
  return AttachLoss::apply(y, loss, loss_scale);
}

void MoeMlp::set_router_bias(const std::vector<double>& bias) {
  TORCH_CHECK(static_cast<int64_t>(bias.size()) == o_.experts, "moe: ", bias.size(),
              " router biases for ", o_.experts, " experts");
  // Where and in what the router's scores are computed, once, not at every forward.
  const at::ScalarType rt = router_.scalar_type() == at::kDouble ? at::kDouble : at::kFloat;
  bias_ = at::tensor(bias, at::kDouble).to(router_.device(), rt);
}

MoeLayerStats MoeMlp::take_statistics() {
  MoeLayerStats s;
  if (aux_sum_.defined()) s.aux_loss = aux_sum_.item<double>();
  s.dropped = dropped_;
  if (load_sum_.defined()) {
    const at::Tensor load = load_sum_.to(at::kCPU, at::kLong).contiguous();
    s.load.assign(load.data_ptr<int64_t>(), load.data_ptr<int64_t>() + load.numel());
  }
  aux_sum_ = load_sum_ = at::Tensor();
  dropped_ = 0;
  return s;
}

}  // namespace trident
