// One optimizer step: micro-batches from the step's global batch through the schedule,
// gradient reduction and clipping, AdamW, and the loss agreed by every rank.
#include "train/trainer.h"

#include <ATen/ATen.h>
#include <c10/util/Exception.h>  // TORCH_CHECK
#include <sys/resource.h>        // getrusage

#include <algorithm>  // std::min_element, std::max_element
#include <chrono>
#include <map>

#include "common/fault_injection.h"  // corrupt_batch
#include "common/memory_tracker.h"   // peak_tensor_bytes
#include "config/data_windows.h"     // parse_data_windows, data_batch_of_step
#include "config/input_error.h"      // InputError
#include "data/data_config.h"        // source_options, open_eval_set
#include "data/eval_set.h"           // data::EvalSet
#include "data/token_source.h"
#include "models/context_split.h"  // take_context_slice
#include "models/model_config.h"
#include "models/model_stage.h"
#include "parallel/parallel_context.h"
#include "pipeline/rendezvous_checker.h"
#include "pipeline/schedule_checker.h"
#include "train/lr_schedule.h"
#include "train/plan_of_config.h"  // plan_model, for the FLOPs
#include "zero/zero_optimizer.h"

namespace trident {

Trainer::Trainer(const TrainConfig& config, ParallelContext& ctx)
    : config_(config),
      ctx_(ctx),
      guard_(config.guard, config.optimizer.grad_clip > 0, config.optimizer.warmup_steps) {
  const auto& p = config.parallel;
  check_device(config.train.device);
  TORCH_CHECK(ctx.grid().data() == p.dp && ctx.grid().pp() == p.pp && ctx.grid().tp() == p.tp &&
                  ctx.grid().ep() == p.ep && ctx.grid().cp() == p.cp,
              "the parallel context does not match the config's layout");
  source_ = data::open_source(data::source_options(config));
  if (config.eval.enabled())
    eval_set_ = std::make_unique<data::EvalSet>(data::open_eval_set(config));
  progress_.skipped_data = parse_data_windows(config.data.skip);

  // Stage 3 draws each rank's shard of the parameters itself: no parameter is ever whole
  // in memory, and with the nvme tier the shards are drawn straight into it.
  const bool drawn = p.zero_stage == 3;
  model_ = make_model_stage(config, ctx.tp(), ctx.coord().pp, static_cast<int>(p.pp), ctx.device(),
                            drawn, &ctx.ep(), &ctx.cp());
  ZeroOptions zero;
  zero.stage = static_cast<int>(p.zero_stage);
  if (drawn) zero.draw_seed = static_cast<uint64_t>(config.train.seed);
  zero.bucket_size = p.bucket_size;
  zero.reduce_dtype = p.grad_reduce_dtype == ReduceDtype::kBf16 ? at::kBFloat16 : at::kFloat;
  zero.persist_below = p.zero3_persist_below;
  zero.gather.prefetch = p.zero3_prefetch == Toggle::kOn;
  zero.gather.max_live_layers = static_cast<int>(p.zero3_max_live_layers);
  zero.gather.reshard_after_forward = p.zero3_reshard_after_forward == Toggle::kOn;
  // The cpu tier changes nothing on a CPU build (the states are in host memory already);
  // the header line says so.
  zero.offload.optimizer = p.offload_optimizer == OffloadTier::kNvme;
  zero.offload.params = p.offload_params == OffloadTier::kNvme;
  zero.offload.dir = p.nvme_path;
  zero.offload.buffer_count = static_cast<int>(p.offload_buffer_count);
  zero.offload.block_size = p.offload_block_size;
  const OptimizerConfig& opt = config.optimizer;
  zero.muon.enabled = opt.name == OptimizerName::kMuon;
  zero.muon.momentum = opt.muon_momentum;
  zero.muon.nesterov = opt.muon_nesterov;
  zero.muon.ns_steps = static_cast<int>(opt.muon_ns_steps);
  zero.muon.spectral = opt.muon_scale == MuonScale::kSpectral;
  zero.muon.lr_ratio = zero.muon.spectral ? opt.muon_lr / opt.lr : 1.0;
  zero.muon.exchange_bytes = opt.muon_exchange_mib << 20;
  AdamWOptions adamw;
  adamw.beta1 = config.optimizer.beta1;
  adamw.beta2 = config.optimizer.beta2;
  adamw.eps = config.optimizer.eps;
  adamw.weight_decay = config.optimizer.weight_decay;
  optimizer_ = std::make_unique<ZeroOptimizer>(model_->params().params(), ctx, zero, adamw,
                                               model_->layer_units());
  model_->set_layer_scope(optimizer_->layer_scope());
  // The tied embedding's lookup sends its gradient as rows (docs/zero.md) when gathering
  // every rank's rows moves less than the dense gradient: fewer tokens per step than the
  // embedding has rows on this rank. Not under ZB-H1, whose weight half differentiates for
  // the weights alone and would never reach a lookup that reads its weight outside the graph.
  const int64_t step_tokens = config.train.global_batch_size * config.model.seq_len;
  if (step_tokens < config.padded_vocab() / p.tp && p.schedule != PipelineSchedule::kZbH1)
    model_->set_row_grad_sink(optimizer_->row_grad_sink());

  RuntimeOptions runtime;
  runtime.checkpointing = p.activation_checkpointing == ActivationCheckpointing::kFull;
  runtime.micro_batch_size = config.train.micro_batch_size;
  runtime.dtype = precision_dtype(config.train.precision);
  runtime.device = ctx.device();
  runtime_ = std::make_unique<PipelineRuntime>(*model_, ctx, runtime);

  // Every stage's list is checked together before anything runs.
  const int stages = static_cast<int>(p.pp);
  const int m = static_cast<int>(config.micro_batches());
  const int chunks = static_cast<int>(p.virtual_stages);
  const std::vector<pipeline::Schedule> all =
      pipeline::make_schedules(p.schedule, stages, m, chunks);
  const pipeline::CheckReport report = pipeline::check_schedules(all, m);
  TORCH_CHECK(report.ok, "pipeline schedule '", p.schedule, "' failed its check: ", report.error);
  // Over NCCL a send waits for its receive: the schedule must not deadlock there either.
  if (ctx.transport() == DeviceTransport::kNccl) {
    const std::string nccl = pipeline::check_rendezvous(all, pipeline::Channels::kPerLink);
    if (!nccl.empty())
      throw InputError("parallel.schedule = \"" + std::string(name_of(p.schedule)) +
                       "\" cannot run on GPUs: over NCCL, where a send waits for its receive, " +
                       nccl + "; use \"1f1b\", \"zb-h1\" or \"gpipe\" (docs/gpu.md)");
  }
  schedule_ = all[ctx.coord().pp];
}

Trainer::~Trainer() = default;

std::optional<double> Trainer::loss_floor() const { return source_->loss_floor(); }
std::string Trainer::data_description() const { return source_->describe(); }

double Trainer::flops_per_step() const {
  // The planner's count (plan::model_flops_per_step): forward and backward through each
  // layer's matrices (an MoE layer's active ones) and the head, and attention's products.
  return plan::model_flops_per_step(plan_model(config_), static_cast<int>(config_.parallel.tp));
}

void Trainer::restore_progress() {
  std::vector<DataWindow> windows = progress_.skipped_data;
  for (const DataWindow& w : parse_data_windows(config_.data.skip)) windows.push_back(w);
  progress_.skipped_data = merge_windows(windows);
  guard_.restore_from(progress_);
  skipped_in_a_row_ = 0;  // checkpoints are written after healthy steps only
  model_->set_router_bias(progress_.router_bias);  // none saved: the biases start at 0
}

void Trainer::skip_data(DataWindow window) {
  progress_.skipped_data.push_back(window);
  progress_.skipped_data = merge_windows(progress_.skipped_data);
}

int64_t Trainer::data_batch(int64_t step) const {
  return data_batch_of_step(progress_.skipped_data, step);
}

MicroBatch Trainer::micro_batch(int64_t batch, int k) const {
  // Global sequence indices: dp rank d takes [d*m*B, (d+1)*m*B), micro-batch k of them
  // the k-th run of B. Changing dp or m re-slices the same global batch; the cp ranks of a
  // dp rank take their chunks of the same sequences.
  const int64_t B = config_.train.micro_batch_size;
  const int64_t T = config_.model.seq_len;
  const int64_t m = config_.micro_batches();
  const int64_t first = (ctx_.grid().data_rank(ctx_.coord()) * m + k) * B;
  if (!model_->is_first() && !model_->is_last()) return {};
  std::vector<int32_t> tokens(static_cast<size_t>(B * (T + 1)));
  data::fill_batch(*source_, batch - 1, first, B, T, tokens.data());
  fault::corrupt_batch(batch, first, B, T + 1, config_.model.vocab, tokens.data());
  return to_micro_batch(tokens, std::vector<bool>(static_cast<size_t>(B), false));
}

MicroBatch Trainer::eval_micro_batch(const std::vector<int64_t>& sequences) const {
  if (!model_->is_first() && !model_->is_last()) return {};
  const int64_t T = config_.model.seq_len;
  std::vector<int32_t> tokens(sequences.size() * static_cast<size_t>(T + 1), 0);
  std::vector<bool> padding(sequences.size());
  for (size_t r = 0; r < sequences.size(); ++r) {
    padding[r] = sequences[r] < 0;
    if (!padding[r]) eval_set_->sequence(sequences[r], T + 1, tokens.data() + r * (T + 1));
  }
  return to_micro_batch(tokens, padding);
}

MicroBatch Trainer::to_micro_batch(std::vector<int32_t>& tokens,
                                   const std::vector<bool>& padding) const {
  const int64_t B = static_cast<int64_t>(padding.size()), T = config_.model.seq_len;
  at::Tensor ids = at::from_blob(tokens.data(), {B, T + 1}, at::kInt).to(ctx_.device(), at::kLong);
  at::Tensor input = ids.narrow(1, 0, T), targets = ids.narrow(1, 1, T);
  // The prediction made from an end-of-document token is left out (target -1), and so is
  // every prediction of a padding row.
  if (config_.data.eod_token >= 0)
    targets = targets.masked_fill(input.eq(config_.data.eod_token), -1);
  for (int64_t r = 0; r < B; ++r)
    if (padding[static_cast<size_t>(r)])
      targets = targets.index_fill(0, at::full({1}, r, at::kLong), -1);
  const int cp = ctx_.grid().cp(), cp_rank = ctx_.grid().cp_rank(ctx_.coord());
  MicroBatch mb;
  mb.input = take_context_slice(input, 1, cp_rank, cp).contiguous();
  mb.targets = take_context_slice(targets, 1, cp_rank, cp).contiguous();
  return mb;
}

int64_t Trainer::counted_targets(const int32_t* row, int64_t T) const {
  const int64_t eod = config_.data.eod_token;
  if (eod < 0) return T;
  int64_t counted = 0;
  for (int64_t t = 0; t < T; ++t) counted += row[t] != eod;
  return counted;
}

double Trainer::loss_scale(int64_t batch) const {
  const int64_t global = config_.train.global_batch_size, T = config_.model.seq_len;
  if (config_.data.eod_token < 0) return 1.0 / static_cast<double>(global * T);
  // One over the tokens the step counts: every rank reads the whole global batch's inputs,
  // so that no collective is needed and the split (dp, cp, micro-batches) cannot matter.
  std::vector<int32_t> tokens(static_cast<size_t>(global * (T + 1)));
  data::fill_batch(*source_, batch - 1, 0, global, T, tokens.data());
  fault::corrupt_batch(batch, 0, global, T + 1, config_.model.vocab, tokens.data());
  int64_t counted = 0;
  for (int64_t s = 0; s < global; ++s) counted += counted_targets(tokens.data() + s * (T + 1), T);
  return 1.0 / static_cast<double>(std::max<int64_t>(counted, 1));
}

void Trainer::count_sources(StepMetrics& m) const {
  m.sources = source_->source_names();
  m.tokens_by_source.assign(m.sources.size(), 0);
  m.epochs_by_source.assign(m.sources.size(), 0.0);
  const int64_t T = config_.model.seq_len;
  for (int64_t i = 0; i < config_.train.global_batch_size; ++i) {
    const data::SequenceOrigin o = source_->origin(m.data_batch - 1, i);
    const size_t k = static_cast<size_t>(o.source);
    m.tokens_by_source[k] += T;
    m.epochs_by_source[k] = std::max(m.epochs_by_source[k], o.epoch_fraction);
  }
}

double Trainer::agree_loss(double stage_loss) {
  // Summed over dp on the last stage, then sent to every stage.
  at::Tensor loss = at::full({1}, stage_loss, at::kDouble);
  ctx_.dp().all_reduce(loss)->wait();
  ctx_.pp().broadcast(loss, ctx_.grid().pp() - 1)->wait();
  return loss.item<double>();
}

std::map<int64_t, std::vector<double>> Trainer::gather_moe_statistics(StepMetrics& metrics) {
  std::map<int64_t, MoeLayerStats> mine;
  model_->take_moe_statistics(mine);
  // Per layer: aux loss, dropped, then the experts' loads; tp ranks hold the same numbers,
  // so only tp rank 0 adds its own.
  const int64_t layers = config_.model.layers, experts = config_.model.moe_experts;
  const int64_t width = 2 + experts;
  at::Tensor all = at::zeros({layers * width}, at::kDouble);
  if (ctx_.coord().tp == 0) {
    auto* a = all.data_ptr<double>();
    for (const auto& [layer, s] : mine) {
      a[layer * width] = s.aux_loss;
      a[layer * width + 1] = static_cast<double>(s.dropped);
      for (size_t e = 0; e < s.load.size(); ++e)
        a[layer * width + 2 + static_cast<int64_t>(e)] = static_cast<double>(s.load[e]);
    }
  }
  ctx_.world().all_reduce(all)->wait();
  const auto* a = all.data_ptr<double>();
  std::map<int64_t, std::vector<double>> loads;
  for (int64_t layer = 0; layer < layers; ++layer) {
    if (!config_.model.moe_layer(layer)) continue;
    metrics.moe_aux_loss += a[layer * width];
    metrics.moe_dropped += static_cast<int64_t>(a[layer * width + 1]);
    const double* load = a + layer * width + 2;
    metrics.moe_load.push_back({layer,
                                static_cast<int64_t>(*std::min_element(load, load + experts)),
                                static_cast<int64_t>(*std::max_element(load, load + experts))});
    loads[layer].assign(load, load + experts);
  }
  return loads;
}

void Trainer::update_router_bias(const std::map<int64_t, std::vector<double>>& load) {
  const double rate = config_.model.moe_bias_update_rate;
  for (const auto& [layer, counts] : load) {
    double mean = 0;
    for (double c : counts) mean += c / static_cast<double>(counts.size());
    std::vector<double>& bias = progress_.router_bias[layer];
    bias.resize(counts.size(), 0.0);
    // Integer counts, the same on every rank: every rank moves every bias alike.
    for (size_t e = 0; e < counts.size(); ++e)
      bias[e] += counts[e] < mean ? rate : counts[e] > mean ? -rate : 0.0;
  }
  model_->set_router_bias(progress_.router_bias);
}

StepMetrics Trainer::step() {
  using Clock = std::chrono::steady_clock;
  const auto start = Clock::now();
  const int64_t step = completed_ + 1;
  const LrSchedule lr_schedule = lr_schedule_of(config_.optimizer, config_.train.steps);
  StepMetrics metrics;
  metrics.step = step;
  const TierStats tier_before = optimizer_->tier_stats();
  // The experts' gradients are reduced over the expert-dp group (dp itself when ep = 1):
  // dp's work too.
  auto dp_wait = [this] {
    const double experts = ctx_.grid().ep() > 1 ? ctx_.expert_dp().total_wait_seconds() : 0.0;
    return ctx_.dp().total_wait_seconds() + experts;
  };
  const double dp_wait_before = dp_wait();
  const double ep_wait_before = ctx_.ep().total_wait_seconds();
  const double cp_wait_before = ctx_.cp().total_wait_seconds();
  const double tp_wait_before = ctx_.tp().total_wait_seconds();
  const double pp_wait_before = ctx_.pp().total_wait_seconds();
  metrics.lr = lr_schedule.at(step);
  StepHooks hooks;
  hooks.begin_backward = [this](bool last) { optimizer_->begin_backward(last); };
  hooks.end_backward = [this]() { optimizer_->end_backward(); };
  hooks.reduce_grads = [this, &metrics]() {
    optimizer_->reduce_gradients();
    metrics.grad_norm = optimizer_->grad_norm();
  };
  StepVerdict verdict = StepVerdict::kHealthy;
  hooks.optimizer_step = [this, &metrics, &verdict](double stage_loss) {
    metrics.loss = agree_loss(stage_loss);
    // Both numbers are the same on every rank (the loss is broadcast, the norm all-reduced
    // over the world), so every rank skips the same steps without another collective.
    GuardJudgement judgement = guard_.judge(metrics.loss, metrics.grad_norm);
    verdict = judgement.verdict;
    metrics.skipped = verdict != StepVerdict::kHealthy;
    metrics.spike = verdict == StepVerdict::kSpike;
    metrics.spike_reason = std::move(judgement.reason);
    metrics.guard_warning = std::move(judgement.warning);
    if (metrics.skipped) {
      optimizer_->skip_step();
      return;
    }
    const double clip = config_.optimizer.grad_clip;
    const double scale =
        clip > 0 && metrics.grad_norm > clip ? clip / (metrics.grad_norm + 1e-6) : 1.0;
    optimizer_->step(metrics.lr, scale);
  };
  // The step's data is a function of (seed, batch), the batch one of the step and the
  // windows left out.
  metrics.data_batch = data_batch(step);
  count_sources(metrics);
  last_ = runtime_->run(
      schedule_, [this, &metrics](int k) { return micro_batch(metrics.data_batch, k); },
      loss_scale(metrics.data_batch), hooks);
  guard_.record(step, verdict, metrics.loss, metrics.grad_norm);
  guard_.save_to(progress_, step);
  skipped_in_a_row_ = metrics.skipped ? skipped_in_a_row_ + 1 : 0;
  metrics.skipped_in_a_row = skipped_in_a_row_;
  metrics.step_time_s = std::chrono::duration<double>(Clock::now() - start).count();
  const double tokens =
      static_cast<double>(config_.train.global_batch_size * config_.model.seq_len);
  metrics.tokens_per_s = tokens / metrics.step_time_s;
  metrics.tflops = flops_per_step() / metrics.step_time_s / 1e12;
  metrics.dp_wait_s = dp_wait() - dp_wait_before;
  metrics.ep_wait_s = ctx_.ep().total_wait_seconds() - ep_wait_before;
  metrics.cp_wait_s = ctx_.cp().total_wait_seconds() - cp_wait_before;
  metrics.tp_wait_s = ctx_.tp().total_wait_seconds() - tp_wait_before;
  metrics.pp_wait_s = ctx_.pp().total_wait_seconds() - pp_wait_before;
  for (const auto& [group, wait] :
       {std::pair{&ctx_.dp(), metrics.dp_wait_s}, std::pair{&ctx_.tp(), metrics.tp_wait_s},
        std::pair{&ctx_.pp(), metrics.pp_wait_s}, std::pair{&ctx_.ep(), metrics.ep_wait_s},
        std::pair{&ctx_.cp(), metrics.cp_wait_s}})
    (group->spans_nodes() ? metrics.inter_node_wait_s : metrics.intra_node_wait_s) += wait;
  const TierStats tier = optimizer_->tier_stats();
  metrics.tier_wait_s = tier.wait_s - tier_before.wait_s;
  metrics.tier_stream_s = tier.stream_s - tier_before.stream_s;
  metrics.tier_bytes =
      tier.bytes_read + tier.bytes_written - tier_before.bytes_read - tier_before.bytes_written;
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  metrics.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;  // ru_maxrss is KiB
  metrics.peak_tensor_bytes = peak_tensor_bytes();
  if (config_.model.moe_experts > 0) {
    const auto load = gather_moe_statistics(metrics);
    // A skipped step changed no weight: the biases stay too.
    if (config_.model.moe_router == MoeRouter::kSigmoid && !metrics.skipped)
      update_router_bias(load);
  }
  completed_ = step;
  return metrics;
}

}  // namespace trident
