// The schema table (every config key, its default, allowed values and meaning) and
// the small helpers built on it: value formatting, key lookup, suggestions.
#include "config/config_schema.h"

#include <algorithm>
#include <charconv>   // std::to_chars: shortest round-trip float text
#include <cmath>      // std::isfinite, std::floor
#include <cstdio>     // std::snprintf for \u escapes
#include <numeric>    // std::lcm
#include <stdexcept>  // std::logic_error
#include <type_traits>
#include <utility>  // std::pair

namespace trident {

int64_t TrainConfig::micro_batches() const {
  const int64_t per_step = train.micro_batch_size * std::max<int64_t>(parallel.dp, 1);
  return per_step > 0 ? train.global_batch_size / per_step : 0;
}

int64_t TrainConfig::padded_vocab() const {
  const int64_t multiple =
      std::lcm(std::max<int64_t>(model.vocab_multiple, 1), std::max<int64_t>(parallel.tp, 1));
  return (model.vocab + multiple - 1) / multiple * multiple;
}

bool TrainConfig::releases_host_memory() const {
  if (train.allocator == Allocator::kAuto)
    return parallel.offload_params == OffloadTier::kNvme ||
           parallel.offload_optimizer == OffloadTier::kNvme;
  return train.allocator == Allocator::kRelease;
}

namespace config_detail {
namespace {

template <typename T>
constexpr ValueType value_type_of() {
  if constexpr (std::is_same_v<T, int64_t>)
    return ValueType::kInt;
  else if constexpr (std::is_same_v<T, double>)
    return ValueType::kFloat;
  else if constexpr (std::is_same_v<T, bool>)
    return ValueType::kBool;
  else
    return ValueType::kString;
}

/// The accessor for TrainConfig::*section.*member; its type follows the member's.
template <typename Section, typename T>
FieldRef field(Section TrainConfig::*section, T Section::*member) {
  return FieldRef{
      value_type_of<T>(),
      [section, member](const TrainConfig& c) { return ConfigValue((c.*section).*member); },
      [section, member](TrainConfig& c, const ConfigValue& v) {
        (c.*section).*member = std::get<T>(v);
      }};
}

/// The accessor for a choice (an enum member): read and written by its config name. The
/// parser checks the name against the choices before it sets the field.
template <typename Section, typename E>
FieldRef choice_field(Section TrainConfig::*section, E Section::*member) {
  return FieldRef{ValueType::kString,
                  [section, member](const TrainConfig& c) {
                    return ConfigValue(std::string(name_of((c.*section).*member)));
                  },
                  [section, member](TrainConfig& c, const ConfigValue& v) {
                    const std::optional<E> value = parse_choice<E>(std::get<std::string>(v));
                    if (!value) throw std::logic_error("config: a choice was set unchecked");
                    (c.*section).*member = *value;
                  }};
}

Allowed any() { return {}; }
Allowed at_least(double lo) { return Allowed{lo, std::nullopt, false, false, {}}; }
Allowed above(double lo) { return Allowed{lo, std::nullopt, true, false, {}}; }
Allowed half_open(double lo, double hi) { return Allowed{lo, hi, false, true, {}}; }
Allowed closed(double lo, double hi) { return Allowed{lo, hi, false, false, {}}; }
Allowed one_of(std::vector<ConfigValue> choices) {
  return Allowed{std::nullopt, std::nullopt, false, false, std::move(choices)};
}
/// `allowed`, with `value` refused for the reason `why`.
Allowed refusing(Allowed allowed, ConfigValue value, const char* why) {
  allowed.refused.push_back({std::move(value), why});
  return allowed;
}
/// Exactly the names of E's values.
template <typename E>
Allowed choices_of() {
  std::vector<ConfigValue> choices;
  for (const ChoiceName<E>& c : choice_names<E>()) choices.emplace_back(std::string(c.name));
  return one_of(std::move(choices));
}

using M = ModelConfig;
using P = ParallelConfig;
using T = TrainSection;
using O = OptimizerConfig;
using D = DataConfig;
using E = EvalConfig;
using C = CheckpointConfig;
using G = GuardConfig;
using L = LoggingConfig;
constexpr auto kModel = &TrainConfig::model;
constexpr auto kParallel = &TrainConfig::parallel;
constexpr auto kTrain = &TrainConfig::train;
constexpr auto kOpt = &TrainConfig::optimizer;
constexpr auto kData = &TrainConfig::data;
constexpr auto kEval = &TrainConfig::eval;
constexpr auto kCkpt = &TrainConfig::checkpoint;
constexpr auto kGuard = &TrainConfig::guard;
constexpr auto kLog = &TrainConfig::logging;

std::vector<KeySpec> build_schema() {
  const std::vector<ConfigValue> zero_stages = {int64_t{0}, int64_t{1}, int64_t{2}, int64_t{3}};
  // GPT-2 has no RoPE, RMSNorm, grouped-query attention or SwiGLU, and always ties its head;
  // below stage 3 no parameter is gathered.
  const AppliesWhen llama{"model.arch", std::string("llama")};
  const AppliesWhen zero3{"parallel.zero_stage", int64_t{3}};
  const AppliesWhen guarded{"guard.enabled", true};
  const AppliesWhen token_files{"data.source", std::string("synthetic"), true};
  const AppliesWhen wsd{"optimizer.schedule", std::string("wsd")};
  const AppliesWhen muon{"optimizer.name", std::string("muon")};
  // DeepSpeed's "cpu" tier moves states from the GPU to pinned host memory. trident has no
  // such tier: a CPU-device run keeps its states in host memory already (nothing to save),
  // and a CUDA run refuses offload (config_validate.cpp). Accepting "cpu" would promise
  // memory the run does not save, and the planner would count it.
  const char* no_cpu_tier =
      "there is no cpu tier: with train.device = \"cpu\" the states are in host memory "
      "already, so it would save nothing, and a CUDA run does not offload to pinned host "
      "memory; use \"nvme\" (files under parallel.nvme_path) to take them out of memory, or "
      "\"none\"";
  const Allowed tiers = refusing(choices_of<OffloadTier>(), std::string("cpu"), no_cpu_tier);
  return {
      {"model", "arch", choice_field(kModel, &M::arch), choices_of<ModelArch>(),
       "model family: GPT-2 (LayerNorm, learned positions, GELU) or Llama (RMSNorm, RoPE, "
       "SwiGLU, grouped-query attention)"},
      {"model", "layers", field(kModel, &M::layers), at_least(1), "transformer blocks"},
      {"model", "hidden", field(kModel, &M::hidden), at_least(1),
       "hidden size; divisible by heads"},
      {"model", "heads", field(kModel, &M::heads), at_least(1),
       "attention heads; divisible by parallel.tp"},
      {"model", "vocab", field(kModel, &M::vocab), at_least(1), "tokenizer vocabulary size"},
      {"model", "seq_len", field(kModel, &M::seq_len), at_least(1),
       "tokens per sequence (gpt2: also the number of learned positions)"},
      {"model", "vocab_multiple", field(kModel, &M::vocab_multiple), at_least(1),
       "embedding rows are padded to a multiple of lcm(vocab_multiple, tp)"},
      {"model", "kv_heads", field(kModel, &M::kv_heads), at_least(0),
       "llama: key/value heads (grouped-query attention), dividing heads; 0 means heads, 1 is "
       "multi-query",
       llama},
      {"model", "ffn_hidden", field(kModel, &M::ffn_hidden), at_least(0),
       "llama: the SwiGLU MLP's intermediate size (required); gpt2's MLP is 4 * hidden", llama},
      {"model", "rope_theta", field(kModel, &M::rope_theta), above(0),
       "llama: RoPE base, inv_freq = rope_theta^(-2i/head_dim)", llama},
      {"model", "norm_eps", field(kModel, &M::norm_eps), above(0), "llama: RMSNorm epsilon", llama},
      {"model", "tie_embeddings", field(kModel, &M::tie_embeddings), any(),
       "llama: the output head shares the token embedding (gpt2 always ties it)", llama},
      {"model", "moe_experts", field(kModel, &M::moe_experts), at_least(0),
       "llama: expert MLPs of a Mixture-of-Experts layer; 0 is the dense model (docs/moe.md)",
       llama},
      {"model", "moe_top_k", field(kModel, &M::moe_top_k), at_least(1),
       "llama: experts each token goes to (softmax, then the top k, their weights renormalised "
       "to sum to 1, as Mixtral; ties go to the lower expert index)",
       llama},
      {"model", "moe_ffn_hidden", field(kModel, &M::moe_ffn_hidden), at_least(0),
       "llama: an expert's SwiGLU intermediate size; 0 means model.ffn_hidden", llama},
      {"model", "moe_layer_every", field(kModel, &M::moe_layer_every), at_least(1),
       "llama: layer i (from 0) has an MoE MLP when (i + 1) % moe_layer_every == 0; 1: all", llama},
      {"model", "moe_aux_loss_coeff", field(kModel, &M::moe_aux_loss_coeff), at_least(0),
       "llama: weight of the load-balancing loss E * sum_e f_e P_e of each MoE layer, taken "
       "per sequence and averaged over the step's (DeepSeek-V3's sequence-wise form of the "
       "Switch Transformer's loss: no layout changes it; docs/moe.md)",
       llama},
      {"model", "moe_capacity_factor", field(kModel, &M::moe_capacity_factor), at_least(0),
       "llama: 0 routes dropless; else an expert takes at most ceil(factor * seq_len * "
       "moe_top_k / moe_experts) tokens of each sequence, the first in token order, and drops "
       "the rest (the token keeps its other experts and the residual)",
       llama},
      {"model", "moe_shared_expert", field(kModel, &M::moe_shared_expert), any(),
       "llama: true adds a shared expert (a SwiGLU of moe_ffn_hidden) that every token goes "
       "to, its output added with weight 1 (DeepSeek-MoE, Qwen-MoE)",
       llama},
      {"model", "moe_router", choice_field(kModel, &M::moe_router), choices_of<MoeRouter>(),
       "llama: softmax scores the experts, takes the top k and renormalises their weights "
       "(Mixtral); sigmoid scores each expert alone, takes the top k of score + bias, and "
       "weighs them by their scores renormalised, the bias (no gradient) moving after each "
       "step towards an even load (DeepSeek-V3's auxiliary-loss-free balancing)",
       llama},
      {"model", "moe_bias_update_rate", field(kModel, &M::moe_bias_update_rate), at_least(0),
       "llama, moe_router = \"sigmoid\": after each step every expert's bias moves by this "
       "much, up when the expert got fewer than the mean of the step's choices in its layer, "
       "down when more; 0 keeps the biases at 0",
       llama},
      {"model", "moe_z_loss_coeff", field(kModel, &M::moe_z_loss_coeff), at_least(0),
       "llama: weight of the router z-loss, the mean squared logsumexp of the router's logits",
       llama},

      {"parallel", "auto", field(kParallel, &P::automatic), any(),
       "true: trident train chooses dp, pp, tp, zero_stage, the offload, micro_batch_size, "
       "activation_checkpointing, sequence_parallel and the schedule for the ranks and memory "
       "at hand, as --auto does (it needs --cluster FILE, this machine's calibration); the "
       "choice is written to logging.run_dir/resolved_config.toml"},
      {"parallel", "dp", field(kParallel, &P::dp), at_least(0),
       "data-parallel ranks; 0 derives it as world size / (cp * pp * tp)"},
      {"parallel", "pp", field(kParallel, &P::pp), at_least(1),
       "pipeline stages; divides model.layers"},
      {"parallel", "tp", field(kParallel, &P::tp), at_least(1),
       "tensor-parallel ranks; divides model.heads"},
      {"parallel", "ep", field(kParallel, &P::ep), at_least(1),
       "expert parallelism (Mixture-of-Experts): each MoE layer's experts are shared out among "
       "ep consecutive dp ranks, which send each token to its experts' rank and back by "
       "all-to-all; the experts' gradients are reduced (and their ZeRO shards cut) over the "
       "dp * cp / ep ranks holding the same experts; divides parallel.dp * parallel.cp and "
       "model.moe_experts"},
      {"parallel", "cp", field(kParallel, &P::cp), at_least(1),
       "context parallelism: each sequence is cut into 2 * cp chunks and cp consecutive ranks "
       "hold two each (rank i chunks i and 2cp-1-i, so that causal attention's work is even); "
       "attention passes keys and values around the cp ranks' ring, and gradients are reduced "
       "(and ZeRO states sharded) over dp * cp ranks; model.seq_len divisible by 2 * cp "
       "(docs/context.md)"},
      {"parallel", "zero_stage", field(kParallel, &P::zero_stage), one_of(zero_stages),
       "ZeRO: 0 all-reduce gradients, 1 shard optimizer states, 2 also shard gradients, "
       "3 also shard parameters (gathered per layer on use)"},
      {"parallel", "schedule", choice_field(kParallel, &P::schedule),
       choices_of<PipelineSchedule>(),
       "pipeline schedule: gpipe, 1f1b, interleaved-1f1b (virtual stages, Megatron's order) or "
       "zb-h1 (backward split into input and weight halves, Qi et al.)"},
      {"parallel", "virtual_stages", field(kParallel, &P::virtual_stages), at_least(1),
       "interleaved-1f1b: model chunks per pipeline stage (chunk c of stage s holds virtual "
       "stage c * pp + s); model.layers divisible by pp * virtual_stages"},
      {"parallel", "activation_checkpointing",
       choice_field(kParallel, &P::activation_checkpointing), choices_of<ActivationCheckpointing>(),
       "none keeps every activation; selective recomputes only attention's scores, softmax and "
       "weighted values in backward (Megatron's selective recomputation); full keeps each "
       "stage's input and recomputes its forward before its backward"},
      {"parallel", "sequence_parallel", field(kParallel, &P::sequence_parallel), any(),
       "with tp > 1: layer norms and the residual stream are split over the tp ranks along "
       "the sequence (all-gather before and reduce-scatter after each tp region instead of "
       "all-reduces), dividing their activations and the pipeline's traffic by tp; "
       "model.seq_len must be divisible by tp"},
      {"parallel", "bucket_size", field(kParallel, &P::bucket_size), at_least(1),
       "elements per gradient bucket for reduce-scatter / all-reduce"},
      {"parallel", "timeout_s", field(kParallel, &P::timeout_s), above(0),
       "seconds a collective may take before the job aborts with a message"},
      {"parallel", "grad_reduce_dtype", choice_field(kParallel, &P::grad_reduce_dtype),
       choices_of<ReduceDtype>(), "dtype gradients are reduced in"},
      {"parallel", "zero3_prefetch", choice_field(kParallel, &P::zero3_prefetch),
       choices_of<Toggle>(),
       "ZeRO 3: all-gather the next layer's parameters while the current layer computes", zero3},
      {"parallel", "zero3_max_live_layers", field(kParallel, &P::zero3_max_live_layers),
       at_least(1),
       "ZeRO 3: layers whose parameters are gathered at once, the prefetched one included", zero3},
      {"parallel", "zero3_persist_below", field(kParallel, &P::zero3_persist_below), at_least(0),
       "ZeRO 3: parameters of fewer elements (norms, biases) stay gathered on every rank", zero3},
      {"parallel", "zero3_reshard_after_forward",
       choice_field(kParallel, &P::zero3_reshard_after_forward), choices_of<Toggle>(),
       "ZeRO 3: release a layer after its forward and gather it again for its backward (on), "
       "or keep every layer gathered from its first forward to the step's end (off)",
       zero3},
      {"parallel", "offload_optimizer", choice_field(kParallel, &P::offload_optimizer), tiers,
       "where the optimizer's shard (fp32 master weights, both Adam moments) lives: in memory "
       "(none) or in files under nvme_path streamed through the AdamW step (nvme); there is no "
       "cpu tier (docs/offload.md)"},
      {"parallel", "offload_params", choice_field(kParallel, &P::offload_params), tiers,
       "ZeRO 3 only: where the parameter shard lives between gathers; nvme needs "
       "offload_optimizer = \"nvme\" (the shard travels with the optimizer's)"},
      {"parallel", "nvme_path", field(kParallel, &P::nvme_path), any(),
       "directory for the nvme tier (a local disk); each rank writes its own files under it, "
       "recreated at start-up and removed at exit (the checkpoint is the truth)"},
      {"parallel", "offload_buffer_count", field(kParallel, &P::offload_buffer_count), at_least(3),
       "nvme tier: aligned buffers in the ring (reads ahead, the one being updated, writes "
       "behind)"},
      {"parallel", "offload_block_size", field(kParallel, &P::offload_block_size), at_least(4096),
       "nvme tier: bytes of each state per transfer (rounded down to whole 64 Ki-element "
       "chunks, at least one)"},

      {"train", "micro_batch_size", field(kTrain, &T::micro_batch_size), at_least(1),
       "sequences per micro-batch"},
      {"train", "global_batch_size", field(kTrain, &T::global_batch_size), at_least(1),
       "sequences per step; divisible by micro_batch_size * dp"},
      {"train", "steps", field(kTrain, &T::steps), at_least(1),
       "optimizer steps of the whole run (sets the LR schedule)"},
      {"train", "stop_at", field(kTrain, &T::stop_at), at_least(0),
       "stop after this step (for partial runs); 0 runs to steps"},
      {"train", "precision", choice_field(kTrain, &T::precision), choices_of<Precision>(),
       "compute dtype; fp64 is for parity tests"},
      {"train", "device", choice_field(kTrain, &T::device), choices_of<Device>(),
       "where tensors live: cpu, or cuda (a GPU build on a GPU node; see docs/gpu.md)"},
      {"train", "seed", field(kTrain, &T::seed), at_least(0), "seed for initialisation and data"},
      {"train", "log_every", field(kTrain, &T::log_every), at_least(1),
       "write a metrics line every this many steps"},
      {"train", "threads", field(kTrain, &T::threads), at_least(0),
       "intra-op threads per rank; 0 chooses automatically"},
      {"train", "allocator", choice_field(kTrain, &T::allocator), choices_of<Allocator>(),
       "freed host memory: \"cache\" keeps blocks of 1 MiB or more for reuse within twice "
       "the most ever in use (fastest), \"release\" within the most ever in use (peak "
       "memory follows live tensors), \"auto\" releases when the nvme tier holds state "
       "(offload_optimizer or offload_params = \"nvme\"); docs/offload.md"},
      {"train", "max_skipped_steps", field(kTrain, &T::max_skipped_steps), at_least(1),
       "a step with a non-finite loss or gradient norm is skipped; this many in a row stop "
       "the job"},

      {"optimizer", "name", choice_field(kOpt, &O::name), choices_of<OptimizerName>(),
       "\"adamw\" updates every parameter with AdamW; \"muon\" updates the 2-D matrices of "
       "every block (attention's q, k, v and output, the MLP's and each expert's matrices) "
       "with Muon, orthogonalised momentum, and the rest (embeddings, head, norms, biases, "
       "router) with AdamW (docs/optimizers.md)"},
      {"optimizer", "lr", field(kOpt, &O::lr), above(0), "peak learning rate"},
      {"optimizer", "min_lr", field(kOpt, &O::min_lr), at_least(0),
       "learning rate at the end of the decay (cosine, linear, wsd) and the floor of "
       "inverse_sqrt; <= lr"},
      {"optimizer", "warmup_steps", field(kOpt, &O::warmup_steps), at_least(0),
       "steps of linear warm-up"},
      {"optimizer", "schedule", choice_field(kOpt, &O::schedule), choices_of<LrScheduleKind>(),
       "after the warm-up: cosine or linear decay to min_lr at train.steps; wsd (warm-up, "
       "stable, decay) holds lr, then decays to min_lr over the last decay_fraction of "
       "train.steps; constant holds lr; inverse_sqrt is lr * sqrt(warmup_steps / step), at "
       "least min_lr (docs/training.md)"},
      {"optimizer", "decay_fraction", field(kOpt, &O::decay_fraction), closed(0, 1),
       "wsd: the share of train.steps that the final decay takes (rounded to whole steps, "
       "never reaching into the warm-up)",
       wsd},
      {"optimizer", "decay_shape", choice_field(kOpt, &O::decay_shape), choices_of<DecayShape>(),
       "wsd: the decay's curve over its progress p from 0 to 1: lr falls to min_lr as 1 - p "
       "(linear), (1 + cos(pi p)) / 2 (cosine) or 1 - sqrt(p) (1-sqrt)",
       wsd},
      {"optimizer", "weight_decay", field(kOpt, &O::weight_decay), at_least(0),
       "AdamW decoupled weight decay"},
      {"optimizer", "beta1", field(kOpt, &O::beta1), half_open(0, 1), "AdamW beta1"},
      {"optimizer", "beta2", field(kOpt, &O::beta2), half_open(0, 1), "AdamW beta2"},
      {"optimizer", "eps", field(kOpt, &O::eps), above(0), "AdamW epsilon"},
      {"optimizer", "grad_clip", field(kOpt, &O::grad_clip), at_least(0),
       "clip the global gradient norm to this; 0 disables"},
      {"optimizer", "muon_momentum", field(kOpt, &O::muon_momentum), half_open(0, 1),
       "Muon: the momentum mu of M <- mu M + G", muon},
      {"optimizer", "muon_nesterov", field(kOpt, &O::muon_nesterov), any(),
       "Muon: orthogonalise G + mu M (Nesterov) instead of M", muon},
      {"optimizer", "muon_ns_steps", field(kOpt, &O::muon_ns_steps), closed(1, 50),
       "Muon: quintic Newton-Schulz iterations", muon},
      {"optimizer", "muon_scale", choice_field(kOpt, &O::muon_scale), choices_of<MuonScale>(),
       "Muon: \"moonlight\" scales the orthogonalised update of an A x B matrix by 0.2 "
       "sqrt(max(A, B)) so that one lr and weight_decay serve both optimizers; \"spectral\" "
       "by sqrt(max(1, A / B)), with its own learning rate muon_lr",
       muon},
      {"optimizer", "muon_lr", field(kOpt, &O::muon_lr), above(0),
       "Muon with muon_scale = \"spectral\": the matrices' peak learning rate, following "
       "lr's schedule (lr and min_lr keep applying to the AdamW parameters)",
       muon},
      {"optimizer", "muon_exchange_mib", field(kOpt, &O::muon_exchange_mib), at_least(1),
       "Muon: MiB of each rank's buffer in which its stage's matrices meet whole on their "
       "owners; the matrices are orthogonalised in rounds that fit it (a matrix larger than "
       "it gets a round of its own)",
       muon},
      {"optimizer", "reset_states", field(kOpt, &O::reset_states), any(),
       "resume a checkpoint written with the other optimizer.name, starting fresh optimizer "
       "states (moments, momentum); without it such a checkpoint is refused"},

      {"data", "source", field(kData, &D::source), any(),
       "\"synthetic\" or the path of a token file; leave it out when [[data.mix]] tables list "
       "the files of a mixture (below)"},
      {"data", "order", choice_field(kData, &D::order), choices_of<DataOrder>(),
       "token files: \"epochs\" reads each file's non-overlapping windows once per epoch, in a "
       "fresh keyed permutation each epoch; \"windows\" draws windows at any token offset with "
       "replacement (docs/data.md); synthetic data has no order to choose",
       token_files},
      {"data", "valid_fraction", field(kData, &D::valid_fraction), half_open(0, 1),
       "token files: the last fraction of each file's non-overlapping windows (at least one "
       "when > 0) is held out: never trained on, and evaluated on when eval.source is empty",
       token_files},
      {"data", "markov_successors", field(kData, &D::markov_successors), at_least(1),
       "synthetic data: how many successors each token may have (fewer is easier to learn)"},
      {"data", "skip", field(kData, &D::skip), any(),
       "batches of the data stream to leave out, \"FIRST-LAST\" separated by commas (step s "
       "trains on the s-th batch not left out); a rollback of the guard adds to them"},
      {"data", "eod_token", field(kData, &D::eod_token), at_least(-1),
       "the end-of-document token (Megatron's --eod-mask-loss): the loss leaves out each "
       "prediction made from it, and a step's loss is the mean over the tokens it counts, "
       "however the sequence is split; -1 counts every token"},

      {"eval", "source", field(kEval, &E::source), any(),
       "a token file to evaluate on, which the run does not train on; empty: the training "
       "files' held-out windows (data.valid_fraction), or fresh draws of the synthetic chain; "
       "[[eval.mix]] tables list several files by weight instead"},
      {"eval", "sequences", field(kEval, &E::sequences), at_least(0),
       "the evaluation set: this many windows, the same at every evaluation and in every "
       "layout, spread evenly over the held-out (or eval.source) windows and split across a "
       "mixture's sources by weight; 0: no evaluation"},
      {"eval", "every", field(kEval, &E::every), at_least(0),
       "evaluate every this many steps; 0: only at the end (eval.at_end)"},
      {"eval", "at_end", field(kEval, &E::at_end), any(),
       "evaluate after the last step (when eval.sequences > 0)"},
      {"eval", "sample_prompt", field(kEval, &E::sample_prompt), any(),
       "text the model continues at each evaluation (printed, and kept in the run directory)"},
      {"eval", "sample_tokens", field(kEval, &E::sample_tokens), at_least(0),
       "tokens of that continuation; 0: no sample"},

      {"checkpoint", "dir", field(kCkpt, &C::dir), any(),
       "directory to save checkpoints in; empty disables saving"},
      {"checkpoint", "save_every", field(kCkpt, &C::save_every), at_least(0),
       "save every this many steps; 0 disables periodic saves"},
      {"checkpoint", "save_initial", field(kCkpt, &C::save_initial), any(),
       "save the initial weights as step_0 before the first step of a fresh run (a resumed "
       "run saves nothing more): the starting point for an export or another run"},
      {"checkpoint", "load", field(kCkpt, &C::load), any(),
       "checkpoint to resume from (a directory, \"latest\", or \"auto\": the newest valid one in "
       "dir, else start fresh); empty starts fresh"},
      {"checkpoint", "keep_last", field(kCkpt, &C::keep_last), at_least(0),
       "keep only the newest this many checkpoints; 0 keeps all"},
      {"checkpoint", "async", field(kCkpt, &C::async), any(),
       "snapshot each rank's shard to memory and write it in the background while training "
       "goes on (one save in flight; the next waits)"},
      {"checkpoint", "preempt_signals", choice_field(kCkpt, &C::preempt_signals),
       choices_of<PreemptSignals>(),
       "signals on which every rank saves at the next step boundary and exits; a second one "
       "aborts at once"},
      {"checkpoint", "preempt_exit_code", field(kCkpt, &C::preempt_exit_code), half_open(0, 256),
       "exit code after a save on a preemption signal (e.g. one a job script requeues on)"},

      {"guard", "enabled", field(kGuard, &G::enabled), any(),
       "skip a step whose loss spikes far above the recent steps' median (or whose gradient "
       "norm does, when optimizer.grad_clip is 0), and roll back after rollback_after skipped "
       "steps in a row; false: non-finite steps are still skipped, and "
       "train.max_skipped_steps stops the job"},
      {"guard", "window", field(kGuard, &G::window), at_least(2),
       "the recent healthy steps the median and the noise are taken over", guarded},
      {"guard", "min_history", field(kGuard, &G::min_history), at_least(2),
       "healthy steps after optimizer.warmup_steps the guard sees before it judges one, so "
       "that the loss's initial fall is not judged (<= window)",
       guarded},
      {"guard", "loss_ratio", field(kGuard, &G::loss_ratio), above(1),
       "a spike's loss is above loss_ratio * median (and above loss_sigmas)", guarded},
      {"guard", "loss_sigmas", field(kGuard, &G::loss_sigmas), above(0),
       "a spike's loss is above median + loss_sigmas * noise (the recent steps' standard "
       "deviation, from the median of their successive differences)",
       guarded},
      {"guard", "grad_norm_ratio", field(kGuard, &G::grad_norm_ratio), above(1),
       "a spike's gradient norm is above grad_norm_ratio * median (and above grad_norm_sigmas)",
       guarded},
      {"guard", "grad_norm_sigmas", field(kGuard, &G::grad_norm_sigmas), above(0),
       "a spike's gradient norm is above median + grad_norm_sigmas * noise; with "
       "optimizer.grad_clip > 0 such a jump alone is a warning, not a skip",
       guarded},
      {"guard", "rollback_after", field(kGuard, &G::rollback_after), at_least(0),
       "this many skipped steps in a row (spikes or non-finite) reload the newest good "
       "checkpoint and leave out the data since it; 0 never rolls back",
       guarded},
      {"guard", "max_rollbacks", field(kGuard, &G::max_rollbacks), at_least(0),
       "rollbacks in one run before the job stops as diverged", guarded},

      {"logging", "run_dir", field(kLog, &L::run_dir), any(),
       "directory for the run's outputs; empty: runs/<config file name>; \"none\": no run "
       "directory"},
      {"logging", "metrics", field(kLog, &L::metrics), any(),
       "metrics JSONL path; empty: metrics.jsonl in run_dir"},
      {"logging", "trace", field(kLog, &L::trace), any(),
       "Chrome trace (JSON) path; empty: no trace"},
  };
}

/// The accessor for MixSourceConfig::*member.
template <typename T>
std::pair<std::function<ConfigValue(const MixSourceConfig&)>,
          std::function<void(MixSourceConfig&, const ConfigValue&)>>
mix_field(T MixSourceConfig::*member) {
  return {[member](const MixSourceConfig& m) { return ConfigValue(m.*member); },
          [member](MixSourceConfig& m, const ConfigValue& v) { m.*member = std::get<T>(v); }};
}

MixKeySpec mix_key(const char* key, ValueType type,
                   std::pair<std::function<ConfigValue(const MixSourceConfig&)>,
                             std::function<void(MixSourceConfig&, const ConfigValue&)>>
                       access,
                   Allowed allowed, const char* meaning, bool required = false) {
  return {key,     type,    std::move(access.first), std::move(access.second), std::move(allowed),
          meaning, required};
}

std::vector<MixKeySpec> build_mix_schema() {
  using MS = MixSourceConfig;
  return {
      mix_key("path", ValueType::kString, mix_field(&MS::path), any(),
              "the token file (llm.c shard, Megatron .bin/.idx prefix, raw uint16)", true),
      mix_key("weight", ValueType::kFloat, mix_field(&MS::weight), at_least(0),
              "its share of the sequences: weight / the sum of the weights, in whole "
              "thousandths, by a fixed rule (docs/data.md)"),
      mix_key("name", ValueType::kString, mix_field(&MS::name), any(),
              "its name in logs, metrics and trident batch, unique in the mixture; empty: the "
              "file's stem"),
  };
}

size_t edit_distance(const std::string& a, const std::string& b) {
  // Optimal string alignment: like Levenshtein, and a swap of neighbours costs one.
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t cost = a[i - 1] == b[j - 1] ? 0 : 1;
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.size()][b.size()];
}

}  // namespace

const char* type_name(ValueType type) {
  switch (type) {
    case ValueType::kInt:
      return "integer";
    case ValueType::kFloat:
      return "float";
    case ValueType::kString:
      return "string";
    case ValueType::kBool:
      return "boolean";
  }
  return "?";
}

bool Allowed::accepts(const ConfigValue& v) const {
  if (!choices.empty()) return std::find(choices.begin(), choices.end(), v) != choices.end();
  if (std::holds_alternative<std::string>(v) || std::holds_alternative<bool>(v)) return true;
  const double x = std::holds_alternative<int64_t>(v) ? static_cast<double>(std::get<int64_t>(v))
                                                      : std::get<double>(v);
  if (!std::isfinite(x)) return false;
  if (lo && (lo_open ? x <= *lo : x < *lo)) return false;
  if (hi && (hi_open ? x >= *hi : x > *hi)) return false;
  return true;
}

const char* Allowed::refusal(const ConfigValue& v) const {
  for (const Refusal& r : refused)
    if (r.value == v) return r.why;
  return nullptr;
}

std::string Allowed::describe() const {
  auto num = [](double x) {
    return x == std::floor(x) ? std::to_string(static_cast<int64_t>(x)) : format_value(x);
  };
  if (!choices.empty()) {
    std::string text = "one of ";
    for (size_t i = 0; i < choices.size(); ++i) text += (i ? ", " : "") + format_value(choices[i]);
    return text;
  }
  if (lo && hi)
    return std::string("in ") + (lo_open ? "(" : "[") + num(*lo) + ", " + num(*hi) +
           (hi_open ? ")" : "]");
  if (lo) return (lo_open ? "> " : ">= ") + num(*lo);
  if (hi) return (hi_open ? "< " : "<= ") + num(*hi);
  return "";
}

const std::vector<KeySpec>& config_schema() {
  static const std::vector<KeySpec> schema = build_schema();
  return schema;
}

const std::vector<MixKeySpec>& mix_schema() {
  static const std::vector<MixKeySpec> schema = build_mix_schema();
  return schema;
}

const MixKeySpec* find_mix_key(const std::string& key) {
  for (const MixKeySpec& spec : mix_schema())
    if (key == spec.key) return &spec;
  return nullptr;
}

bool has_mix(const std::string& section) { return section == "data" || section == "eval"; }

std::vector<MixSourceConfig>& mix_of(TrainConfig& c, const std::string& section) {
  if (section == "data") return c.data.mix;
  if (section == "eval") return c.eval.mix;
  throw std::logic_error("config: [" + section + "] has no mix tables");
}

const std::vector<MixSourceConfig>& mix_of(const TrainConfig& c, const std::string& section) {
  return mix_of(const_cast<TrainConfig&>(c), section);
}

const std::vector<std::string>& config_sections() {
  static const std::vector<std::string> sections = [] {
    std::vector<std::string> names;
    for (const KeySpec& spec : config_schema())
      if (names.empty() || names.back() != spec.section) names.emplace_back(spec.section);
    return names;
  }();
  return sections;
}

const KeySpec* find_key(const std::string& section, const std::string& key) {
  for (const KeySpec& spec : config_schema())
    if (section == spec.section && key == spec.key) return &spec;
  return nullptr;
}

bool applies(const KeySpec& spec, const TrainConfig& c) {
  if (spec.applies_when.key == nullptr) return true;
  const std::string name = spec.applies_when.key;
  const KeySpec* decider =
      find_key(name.substr(0, name.find('.')), name.substr(name.find('.') + 1));
  if (decider == nullptr) throw std::logic_error("config: applies_when names no key: " + name);
  return (decider->field.get(c) == spec.applies_when.value) != spec.applies_when.unless;
}

std::string format_value(const ConfigValue& v) {
  if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
  if (const auto* i = std::get_if<int64_t>(&v)) return std::to_string(*i);
  if (const auto* x = std::get_if<double>(&v)) {
    char buf[64];
    const auto end = std::to_chars(buf, buf + sizeof(buf), *x).ptr;
    std::string text(buf, end);
    // "1e-04" -> "1e-4": the exponent without leading zeros reads better.
    const size_t exp = text.find('e');
    if (exp != std::string::npos) {
      const size_t digits = exp + (text[exp + 1] == '-' || text[exp + 1] == '+' ? 2 : 1);
      while (digits + 1 < text.size() && text[digits] == '0') text.erase(digits, 1);
    }
    // TOML needs a '.' or an exponent to read the number back as a float.
    if (std::isfinite(*x) && text.find_first_of(".e") == std::string::npos) text += ".0";
    return text;
  }
  std::string out = "\"";
  for (const char ch : std::get<std::string>(v)) {
    if (ch == '"' || ch == '\\') {
      out += '\\';
      out += ch;
    } else if (static_cast<unsigned char>(ch) < 0x20 || ch == 0x7f) {
      char esc[8];
      std::snprintf(esc, sizeof(esc), "\\u%04x", static_cast<unsigned>(ch));
      out += esc;
    } else {
      out += ch;
    }
  }
  return out + "\"";
}

std::string nearest(const std::string& word, const std::vector<std::string>& candidates) {
  const size_t limit = word.size() <= 3 ? 1 : word.size() <= 6 ? 2 : 3;
  std::string best;
  size_t best_distance = limit + 1;
  for (const std::string& candidate : candidates) {
    const size_t d = edit_distance(word, candidate);
    if (d < best_distance) {
      best = candidate;
      best_distance = d;
    }
  }
  return best;
}

}  // namespace config_detail
}  // namespace trident
