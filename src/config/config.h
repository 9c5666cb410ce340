// The typed training configuration: what a TOML config file resolves to, and the
// functions that parse, validate and print it. No libtorch or MPI here, so every tool
// (check, plan, schedule) can read a config cheaply.
#pragma once

#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "config/choices.h"
#include "config/input_error.h"  // InputError

namespace trident {

/// [model]: the transformer's shape.
struct ModelConfig {
  ModelArch arch = ModelArch::kGpt2;
  int64_t layers = 2;
  int64_t hidden = 64;
  int64_t heads = 4;
  int64_t vocab = 256;
  int64_t seq_len = 32;
  int64_t vocab_multiple = 1;  ///< pad the embedding's rows to a multiple of this
  // Llama only (RMSNorm, RoPE, SwiGLU, grouped-query attention):
  int64_t kv_heads = 0;         ///< key/value heads; 0 means model.heads (multi-head)
  int64_t ffn_hidden = 0;       ///< SwiGLU intermediate size; required for llama
  double rope_theta = 10000;    ///< RoPE base
  double norm_eps = 1e-5;       ///< RMSNorm epsilon
  bool tie_embeddings = false;  ///< the output head shares the token embedding
  // Llama only: Mixture-of-Experts MLPs (docs/moe.md); 0 experts is the dense model.
  int64_t moe_experts = 0;           ///< expert MLPs of an MoE layer
  int64_t moe_top_k = 2;             ///< experts each token goes to
  int64_t moe_ffn_hidden = 0;        ///< an expert's SwiGLU size; 0 means ffn_hidden
  int64_t moe_layer_every = 1;       ///< layer i is MoE when (i + 1) % moe_layer_every == 0
  double moe_aux_loss_coeff = 0.01;  ///< load-balancing loss (Switch, Mixtral) weight
  double moe_z_loss_coeff = 0.0;     ///< router z-loss weight
  /// 0: dropless; else each expert takes at most ceil(factor * T * top_k / experts) tokens
  /// of a sequence, the first in token order, and drops the rest
  double moe_capacity_factor = 0.0;
  bool moe_shared_expert = false;  ///< one more expert that every token goes to, weight 1
  MoeRouter moe_router = MoeRouter::kSoftmax;
  double moe_bias_update_rate = 0.001;  ///< sigmoid router: the bias step after each step

  /// Whether layer `index` has an MoE MLP.
  bool moe_layer(int64_t index) const {
    return moe_experts > 0 && (index + 1) % moe_layer_every == 0;
  }

  /// The key/value heads the model has (kv_heads, or heads when it is 0).
  int64_t kv_head_count() const { return kv_heads > 0 ? kv_heads : heads; }
};

/// [parallel]: the layout and how the parallel machinery behaves.
struct ParallelConfig {
  /// parallel.auto: trident chooses the layout, ZeRO stage, offload, micro-batch,
  /// recomputation, sequence parallelism and schedule (as `trident train --auto`).
  bool automatic = false;
  int64_t dp = 0;  ///< 0 in the file means: derive from world size
  int64_t pp = 1;
  int64_t tp = 1;
  int64_t ep = 1;  ///< expert parallelism: ep consecutive dp x cp ranks share out the experts
  int64_t cp = 1;  ///< context parallelism: cp consecutive ranks split each sequence
  int64_t zero_stage = 0;
  PipelineSchedule schedule = PipelineSchedule::kOneFOneB;
  int64_t virtual_stages = 1;  ///< model chunks per pipeline stage (interleaved-1f1b)
  ActivationCheckpointing activation_checkpointing = ActivationCheckpointing::kNone;
  bool sequence_parallel = false;  ///< shard norms and the residual stream over tp by sequence
  int64_t bucket_size = 1 << 20;   ///< elements per gradient bucket
  double timeout_s = 300;
  ReduceDtype grad_reduce_dtype = ReduceDtype::kFp32;
  Toggle zero3_prefetch = Toggle::kOn;                 ///< gather the next layer while one runs
  int64_t zero3_max_live_layers = 2;                   ///< layers gathered at once, at most
  int64_t zero3_persist_below = 100000;                ///< smaller parameters stay gathered
  Toggle zero3_reshard_after_forward = Toggle::kOn;    ///< release a layer after its forward
  OffloadTier offload_optimizer = OffloadTier::kNone;  ///< master weights and moments
  OffloadTier offload_params = OffloadTier::kNone;     ///< ZeRO 3: the parameter shard
  std::string nvme_path;                               ///< directory of the nvme tier's files
  int64_t offload_buffer_count = 4;                    ///< the nvme tier's ring of buffers
  int64_t offload_block_size = 4 << 20;                ///< bytes per state per nvme transfer
};

/// [train]: batch sizes, length of the run, numerics.
struct TrainSection {
  int64_t micro_batch_size = 2;
  int64_t global_batch_size = 8;
  int64_t steps = 100;
  int64_t stop_at = 0;  ///< 0: run to steps
  Precision precision = Precision::kFp32;
  Device device = Device::kCpu;
  int64_t seed = 1234;
  int64_t log_every = 1;
  int64_t threads = 0;                     ///< intra-op threads per rank, 0 = auto
  Allocator allocator = Allocator::kAuto;  ///< freed host memory: kept or returned
  int64_t max_skipped_steps = 10;  ///< consecutive skipped (non-finite) steps before stopping
};

/// [optimizer]: AdamW, or Muon for the blocks' matrices (zero/muon.h), with linear warm-up,
/// then a schedule towards min_lr (train/lr_schedule.h).
struct OptimizerConfig {
  OptimizerName name = OptimizerName::kAdamW;
  double lr = 1e-3;
  double min_lr = 1e-4;
  int64_t warmup_steps = 10;
  LrScheduleKind schedule = LrScheduleKind::kCosine;
  double decay_fraction = 0.2;                         ///< wsd: the final decay's share of steps
  DecayShape decay_shape = DecayShape::kOneMinusSqrt;  ///< wsd: the decay's curve
  double weight_decay = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.95;
  double eps = 1e-8;
  double grad_clip = 1.0;  ///< 0 disables
  double muon_momentum = 0.95;
  bool muon_nesterov = true;
  int64_t muon_ns_steps = 5;  ///< Newton-Schulz iterations
  MuonScale muon_scale = MuonScale::kMoonlight;
  double muon_lr = 0.02;            ///< spectral scale only: the matrices' peak learning rate
  int64_t muon_exchange_mib = 256;  ///< each rank's buffer for gathering whole matrices
  /// Resuming a checkpoint written by the other optimizer starts fresh states instead of
  /// refusing it.
  bool reset_states = false;
};

/// One token file of a mixture: a [[data.mix]] or [[eval.mix]] table.
struct MixSourceConfig {
  std::string path;   ///< the token file
  double weight = 1;  ///< its share of the sequences, relative to the others' weights
  std::string name;   ///< its name in logs and metrics; empty in the file: the file's stem
};

/// [data]: where tokens come from.
struct DataConfig {
  std::string source = "synthetic";      ///< "synthetic" or a token file path; "" with `mix`
  std::vector<MixSourceConfig> mix;      ///< [[data.mix]]: a weighted mixture of token files
  DataOrder order = DataOrder::kEpochs;  ///< how a token file's windows are read
  double valid_fraction = 0;             ///< the last fraction of each file's windows, held out
  int64_t markov_successors = 8;
  std::string skip = "";  ///< batches of the data stream to leave out: "101-300,501-520"
  /// The end-of-document token: the loss leaves out the prediction made from it (the next
  /// document's first token), and a step's loss is the mean over the tokens it counts.
  /// -1: every token counts.
  int64_t eod_token = -1;
};

/// [eval]: the validation loss during training, on a fixed set of sequences.
struct EvalConfig {
  std::string source = "";           ///< a token file; "" (and no mix): the held-out windows
  std::vector<MixSourceConfig> mix;  ///< [[eval.mix]]: evaluation files by weight
  int64_t sequences = 0;             ///< the set's size; 0: no evaluation
  int64_t every = 0;                 ///< evaluate every this many steps; 0: only at_end
  bool at_end = true;                ///< evaluate after the last step
  std::string sample_prompt = "";    ///< text to continue at each evaluation
  int64_t sample_tokens = 0;         ///< tokens of that sample; 0: no sample

  /// Whether the run evaluates at all (eval.sequences > 0).
  bool enabled() const { return sequences > 0; }
};

/// [checkpoint]: saving and resuming.
struct CheckpointConfig {
  std::string dir = "";
  int64_t save_every = 0;
  bool save_initial = false;  ///< a fresh run's initial weights saved as step_0
  std::string load = "";
  int64_t keep_last = 0;
  bool async = false;  ///< write in the background from a host snapshot
  PreemptSignals preempt_signals = PreemptSignals::kTermIntUsr1;
  int64_t preempt_exit_code = 0;  ///< exit code after a save on a preemption signal
};

/// [guard]: the loss-spike guard (docs/faults.md). A step whose loss or gradient norm is far
/// above the recent steps' median is skipped; repeated ones roll back to the newest good
/// checkpoint and leave out the data that led there.
struct GuardConfig {
  bool enabled = true;
  int64_t window = 32;       ///< recent healthy steps the statistics are taken over
  int64_t min_history = 8;   ///< healthy steps after the warm-up before the guard judges
  double loss_ratio = 1.5;   ///< a spike's loss is above ratio * median ...
  double loss_sigmas = 6.0;  ///< ... and above median + sigmas * robust deviation
  double grad_norm_ratio = 10.0;
  double grad_norm_sigmas = 6.0;
  int64_t rollback_after = 3;  ///< skipped steps in a row that roll back; 0: never
  int64_t max_rollbacks = 3;   ///< rollbacks in one run before it stops
};

/// [logging]: where a run writes its outputs.
struct LoggingConfig {
  std::string run_dir = "";
  std::string metrics = "";
  std::string trace = "";
};

/// A whole, validated configuration.
struct TrainConfig {
  ModelConfig model;
  ParallelConfig parallel;
  TrainSection train;
  OptimizerConfig optimizer;
  DataConfig data;
  EvalConfig eval;
  CheckpointConfig checkpoint;
  GuardConfig guard;
  LoggingConfig logging;
  std::string source;  ///< where it came from (file path or "<string>"), for messages

  /// Micro-batches per step on each dp rank: global_batch_size / (micro_batch_size * dp).
  int64_t micro_batches() const;
  /// vocab rounded up to a multiple of lcm(vocab_multiple, tp).
  int64_t padded_vocab() const;
  /// Whether freed large blocks of host memory are kept only within the most ever in use
  /// (train.allocator; "auto": when the nvme tier holds state, where memory, not speed, is
  /// the limit; `--auto` also chooses it for a configuration that fits only so).
  bool releases_host_memory() const;
};

/// Thrown for any bad config; what() is the one message shown to the user.
class ConfigError : public InputError {
  using InputError::InputError;
};

/// Reads the file at `path`, applies --set overrides ("section.key=value", the value
/// read as a TOML value; a bare word is a string) and validates.
/// world_size > 0: checks dp*pp*tp == world_size, deriving dp when it is 0.
/// world_size == 0: dp becomes 1 when it is 0, and there is no world check.
TrainConfig load_config(const std::string& path, const std::vector<std::string>& overrides,
                        int world_size);

/// As load_config, from TOML text; `source_name` is used in messages.
TrainConfig parse_config(const std::string& toml_text, const std::string& source_name,
                         const std::vector<std::string>& overrides, int world_size);

/// As parse_config, for a config trident wrote (to_toml, kept in a checkpoint): a key of
/// the text that has no effect in its model or ZeRO stage is not refused, since older
/// versions wrote every key; --set overrides are checked as parse_config checks them.
TrainConfig parse_resolved_config(const std::string& toml_text, const std::string& source_name,
                                  const std::vector<std::string>& overrides, int world_size);

/// The resolved config as TOML text: every key that has an effect in this model and ZeRO
/// stage, defaults filled in; parse_config(to_toml(c)) gives c back for a c it returned.
std::string to_toml(const TrainConfig& c);

/// Markdown reference of every key (section, key, type, default, meaning), generated
/// from the schema table; docs/config.md is this text.
std::string config_reference_markdown();

}  // namespace trident
