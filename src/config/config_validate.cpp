// Validation: every key against the schema's allowed values, then the cross-key checks
// (the layout divides the model and the batch, dp*pp*tp matches the world size).
#include "config/config_validate.h"

#include <algorithm>  // std::max
#include <stdexcept>  // std::invalid_argument

#include "config/config_schema.h"
#include "config/data_windows.h"  // parse_data_windows

namespace trident::config_detail {
namespace {

/// "{1, 2, 3, 6}": the divisors of n, the values that would make it divide.
std::string divisors_of(int64_t n) {
  std::string text = "{";
  for (int64_t d = 1; d <= n; ++d)
    if (n % d == 0) text += (text.size() > 1 ? ", " : "") + std::to_string(d);
  return text + "}";
}

/// Checks that `of_key` (value n) is divisible by `by_key` (value d).
void check_divisible(const Origins& origins, Errors& errors, const char* of_key, int64_t n,
                     const char* by_key, int64_t d) {
  if (d <= 0 || n % d == 0) return;
  const std::string by(by_key), of(of_key);
  const std::string by_short = by.substr(by.find('.') + 1), of_short = of.substr(of.find('.') + 1);
  errors.push_back(origins.where(of) + ": " + of + " = " + std::to_string(n) +
                   " is not divisible by " + by + " = " + std::to_string(d) + "; use " + by_short +
                   " in " + divisors_of(n) + " or change " + of_short);
}

/// A key set where it changes nothing (a llama key for gpt2, a zero3_* key below stage 3)
/// is refused: the run would silently differ from what the config says.
void check_keys_apply(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  for (const KeySpec& spec : config_schema()) {
    const std::string name = spec.full_name();
    if (!origins.chosen(name) || applies(spec, c)) continue;
    const std::string decider = spec.applies_when.key;
    const std::string wanted = format_value(spec.applies_when.value);
    const KeySpec* d =
        find_key(decider.substr(0, decider.find('.')), decider.substr(decider.find('.') + 1));
    if (spec.applies_when.unless) {
      errors.push_back(origins.where(name) + ": " + name + " has no effect with " + decider +
                       " = " + wanted + ", so it would change nothing; remove it");
      continue;
    }
    errors.push_back(origins.where(name) + ": " + name + " applies only to " + decider + " = " +
                     wanted + ", and here " + decider + " = " + format_value(d->field.get(c)) +
                     ", so it would change nothing; remove it or set " + decider + " = " + wanted);
  }
}

void check_model_shape(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  check_divisible(origins, errors, "model.hidden", c.model.hidden, "model.heads", c.model.heads);
  check_divisible(origins, errors, "model.heads", c.model.heads, "parallel.tp", c.parallel.tp);
  check_divisible(origins, errors, "model.layers", c.model.layers, "parallel.pp", c.parallel.pp);
}

/// Llama's grouped-query attention: query heads share kv heads, and tp splits both; a kv
/// head is replicated on the tp ranks whose query heads read it when tp > kv_heads.
void check_llama_shape(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  const ModelConfig& m = c.model;
  if (m.arch != ModelArch::kLlama) return;  // check_keys_apply refuses llama keys set here
  const int64_t kv = m.kv_head_count(), tp = c.parallel.tp;
  check_divisible(origins, errors, "model.heads", m.heads, "model.kv_heads", kv);
  if ((m.hidden / m.heads) % 2 != 0)
    errors.push_back(
        origins.where("model.hidden") +
        ": the head size model.hidden / model.heads = " + std::to_string(m.hidden / m.heads) +
        " is odd; RoPE rotates pairs of features, so it must be even");
  if (m.ffn_hidden == 0)
    errors.push_back(origins.where("model.ffn_hidden") +
                     ": model.arch = \"llama\" needs model.ffn_hidden, the SwiGLU intermediate "
                     "size (e.g. 1536 for SmolLM-135M)");
  else
    check_divisible(origins, errors, "model.ffn_hidden", m.ffn_hidden, "parallel.tp", tp);
  if (tp <= kv) {
    check_divisible(origins, errors, "model.kv_heads", kv, "parallel.tp", tp);
  } else if (tp % kv != 0) {
    errors.push_back(origins.where("parallel.tp") + ": parallel.tp = " + std::to_string(tp) +
                     " exceeds model.kv_heads = " + std::to_string(kv) +
                     ", so each kv head is replicated on tp / kv_heads ranks, and that needs tp "
                     "to be a multiple of kv_heads; use tp in " +
                     divisors_of(kv) + " or a multiple of " + std::to_string(kv));
  }
}

/// Mixture-of-Experts: a token's top k among the experts; the experts split over tp as the
/// dense MLP does. Sequence parallelism would route each tp rank's slice of the sequence
/// alone: not built yet.
void check_moe(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  const ModelConfig& m = c.model;
  if (m.arch != ModelArch::kLlama || m.moe_experts == 0) return;
  if (m.moe_top_k > m.moe_experts)
    errors.push_back(origins.where("model.moe_top_k") +
                     ": model.moe_top_k = " + std::to_string(m.moe_top_k) +
                     " is more than model.moe_experts = " + std::to_string(m.moe_experts) +
                     "; each token goes to top_k distinct experts");
  if (m.moe_ffn_hidden > 0)
    check_divisible(origins, errors, "model.moe_ffn_hidden", m.moe_ffn_hidden, "parallel.tp",
                    c.parallel.tp);
}

/// Sequence parallelism splits the sequence over the tp ranks: it needs some to split over
/// and an even split.
void check_sequence_parallel(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  const ParallelConfig& p = c.parallel;
  if (!p.sequence_parallel) return;
  if (p.tp < 2) {
    errors.push_back(origins.where("parallel.sequence_parallel") +
                     ": parallel.sequence_parallel = true needs parallel.tp > 1 (it splits the "
                     "sequence over the tensor-parallel ranks), but parallel.tp = " +
                     std::to_string(p.tp) + "; set tp to 2 or more, or sequence_parallel = false");
    return;
  }
  if (p.cp <= 1 && c.model.seq_len % p.tp != 0)
    errors.push_back(origins.where("model.seq_len") +
                     ": parallel.sequence_parallel = true splits the sequence over parallel.tp = " +
                     std::to_string(p.tp) +
                     " ranks, but model.seq_len = " + std::to_string(c.model.seq_len) +
                     " is not divisible by it; use a seq_len "
                     "that is a multiple of " +
                     std::to_string(p.tp) + ", or sequence_parallel = false");
}

/// Context parallelism cuts each sequence into 2 * cp equal chunks (each rank holds two, the
/// causal balancing), which sequence parallelism splits further over tp; an MoE layer's
/// capacity per sequence would need the order of tokens held by other ranks.
void check_context_parallel(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  const ParallelConfig& p = c.parallel;
  if (p.cp <= 1) return;
  const std::string cp = "parallel.cp = " + std::to_string(p.cp);
  const std::string where = origins.where("parallel.cp");
  if (c.model.seq_len % (2 * p.cp) != 0) {
    errors.push_back(origins.where("model.seq_len") + ": " + cp + " cuts each sequence into 2 * " +
                     std::to_string(p.cp) + " = " + std::to_string(2 * p.cp) +
                     " equal chunks, but model.seq_len = " + std::to_string(c.model.seq_len) +
                     " is not divisible by " + std::to_string(2 * p.cp) +
                     "; use a seq_len that is a multiple of it, or cp in " +
                     divisors_of(c.model.seq_len / 2));
    return;
  }
  const int64_t local = c.model.seq_len / p.cp;
  if (p.sequence_parallel && p.tp > 1 && local % p.tp != 0)
    errors.push_back(origins.where("parallel.sequence_parallel") +
                     ": parallel.sequence_parallel = true splits each cp rank's " +
                     std::to_string(local) +
                     " tokens (model.seq_len / parallel.cp) over tp = " + std::to_string(p.tp) +
                     " ranks, which does not divide them; use a seq_len "
                     "that is a multiple of " +
                     std::to_string(p.cp * p.tp) + ", or sequence_parallel = false");
  if (c.model.moe_experts > 0 && c.model.moe_capacity_factor > 0)
    errors.push_back(origins.where("model.moe_capacity_factor") + ": " + cp +
                     " does not run with an expert capacity (model.moe_capacity_factor = " +
                     format_value(c.model.moe_capacity_factor) +
                     ") yet: the capacity takes a sequence's first tokens, which other cp ranks "
                     "hold; set moe_capacity_factor = 0 (dropless) or cp = 1");
}

/// Interleaved 1F1B splits each stage into virtual_stages chunks of equal layers and, as in
/// Megatron, runs rounds of pp micro-batches; the other schedules run one chunk per stage.
void check_virtual_stages(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  const ParallelConfig& p = c.parallel;
  const std::string where = origins.where("parallel.virtual_stages");
  if (p.schedule != PipelineSchedule::kInterleaved1F1B) {
    if (p.virtual_stages != 1)
      errors.push_back(where + ": parallel.virtual_stages = " + std::to_string(p.virtual_stages) +
                       " needs parallel.schedule = \"interleaved-1f1b\"; set it to 1 or change "
                       "the schedule");
    return;
  }
  if (p.pp < 2)
    errors.push_back(origins.where("parallel.schedule") +
                     ": parallel.schedule = \"interleaved-1f1b\" needs parallel.pp >= 2, got " +
                     std::to_string(p.pp) + "; use pp >= 2 or schedule \"1f1b\"");
  if (p.pp > 0 && p.virtual_stages > 0 && c.model.layers % (p.pp * p.virtual_stages) != 0)
    errors.push_back(
        where + ": model.layers = " + std::to_string(c.model.layers) +
        " is not divisible by parallel.pp * parallel.virtual_stages = " + std::to_string(p.pp) +
        " * " + std::to_string(p.virtual_stages) + " = " + std::to_string(p.pp * p.virtual_stages) +
        "; use virtual_stages in " + divisors_of(c.model.layers / std::max<int64_t>(1, p.pp)) +
        " or change layers");
  if (p.zero_stage == 3)
    errors.push_back(origins.where("parallel.zero_stage") +
                     ": parallel.zero_stage = 3 does not run with parallel.schedule = "
                     "\"interleaved-1f1b\" yet; use zero_stage 0, 1 or 2, or schedule \"1f1b\"");
}

/// The micro-batch count the schedules need: interleaved 1F1B runs rounds of pp.
void check_schedule_micro_batches(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  const ParallelConfig& p = c.parallel;
  if (p.dp <= 0 || c.train.micro_batch_size <= 0) return;
  if (p.schedule == PipelineSchedule::kZbH1 && p.zero_stage == 3)
    errors.push_back(origins.where("parallel.zero_stage") +
                     ": parallel.zero_stage = 3 does not run with parallel.schedule = \"zb-h1\" "
                     "yet; use zero_stage 0, 1 or 2, or schedule \"1f1b\"");
  if (p.schedule != PipelineSchedule::kInterleaved1F1B || p.pp < 2) return;
  if (c.train.global_batch_size % (c.train.micro_batch_size * p.dp) != 0) return;  // said above
  const int64_t m = c.train.global_batch_size / (c.train.micro_batch_size * p.dp);
  if (m % p.pp == 0) return;
  errors.push_back(origins.where("train.global_batch_size") + ": train.global_batch_size = " +
                   std::to_string(c.train.global_batch_size) + " gives " + std::to_string(m) +
                   " micro-batches per step (global_batch_size / (micro_batch_size * dp)), but "
                   "parallel.schedule = \"interleaved-1f1b\" runs them in rounds of "
                   "parallel.pp = " +
                   std::to_string(p.pp) + "; make that count a multiple of " +
                   std::to_string(p.pp));
}

void check_world_size(TrainConfig& c, const Origins& origins, int world_size, Errors& errors) {
  ParallelConfig& p = c.parallel;
  const int64_t model_parallel = p.cp * p.pp * p.tp;
  if (world_size <= 0) {
    if (p.dp == 0) p.dp = 1;
    return;
  }
  const std::string where = origins.where("parallel.dp");
  const std::string cp = p.cp > 1 ? "parallel.cp * " : "";
  const std::string cp_value = p.cp > 1 ? std::to_string(p.cp) + " * " : "";
  const std::string pp_tp = cp + "parallel.pp * parallel.tp = " + cp_value + std::to_string(p.pp) +
                            " * " + std::to_string(p.tp) + " = " + std::to_string(model_parallel);
  if (p.dp == 0) {
    if (world_size % model_parallel == 0) {
      p.dp = world_size / model_parallel;
    } else {
      errors.push_back(where + ": cannot derive parallel.dp: the world size " +
                       std::to_string(world_size) + " is not divisible by " + pp_tp +
                       "; run on a multiple of " + std::to_string(model_parallel) +
                       " ranks or change " + (p.cp > 1 ? "cp/" : "") + "pp/tp");
    }
    return;
  }
  const int64_t layout = p.dp * model_parallel;
  if (layout == world_size) return;
  std::string fix = "run with " + std::to_string(layout) + " ranks";
  if (world_size % model_parallel == 0)
    fix += ", or set parallel.dp = " + std::to_string(world_size / model_parallel) +
           " (or 0 to derive it)";
  errors.push_back(where + ": parallel.dp * " + cp + "parallel.pp * parallel.tp = " +
                   std::to_string(p.dp) + " * " + cp_value + std::to_string(p.pp) + " * " +
                   std::to_string(p.tp) + " = " + std::to_string(layout) +
                   " does not match the world size " + std::to_string(world_size) + "; " + fix);
}

/// Expert parallelism shares the experts out among ep of the dp ranks: it needs experts,
/// as many on every rank, and dp ranks to carve it from.
void check_expert_parallel(TrainConfig& c, const Origins& origins, int world_size, Errors& errors) {
  const ParallelConfig& p = c.parallel;
  if (p.ep == 1) return;
  const std::string where = origins.where("parallel.ep");
  const std::string ep = "parallel.ep = " + std::to_string(p.ep);
  if (c.model.arch != ModelArch::kLlama || c.model.moe_experts == 0) {
    errors.push_back(where + ": " + ep +
                     " shares out the experts of a Mixture-of-Experts model, but this model has "
                     "none (model.moe_experts = 0, or not a llama); set parallel.ep = 1");
    return;
  }
  if (c.model.moe_experts % p.ep != 0)
    errors.push_back(where + ": " + ep +
                     " does not divide model.moe_experts = " + std::to_string(c.model.moe_experts) +
                     " (every ep rank holds as many experts); use ep in " +
                     divisors_of(c.model.moe_experts));
  // dp is known once the world is (without one, a dp of 0 reads as 1 here).
  const int64_t replicas = p.dp * p.cp;
  const std::string dp = p.cp > 1 ? "parallel.dp * parallel.cp = " : "parallel.dp = ";
  if (world_size > 0 && p.dp > 0 && replicas % p.ep != 0)
    errors.push_back(where + ": " + ep + " does not divide " + dp + std::to_string(replicas) +
                     " (the ep ranks are carved out of the dp ranks); use ep in " +
                     divisors_of(replicas) + ", or run on more ranks");
}

void check_batch(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  if (c.parallel.dp <= 0) return;  // the world-size check failed and said so
  const int64_t per_step = c.train.micro_batch_size * c.parallel.dp;
  const int64_t global = c.train.global_batch_size;
  if (global % per_step == 0) return;
  const int64_t below = global / per_step * per_step, above = below + per_step;
  errors.push_back(origins.where("train.global_batch_size") +
                   ": train.global_batch_size = " + std::to_string(global) +
                   " is not divisible by train.micro_batch_size * parallel.dp = " +
                   std::to_string(c.train.micro_batch_size) + " * " +
                   std::to_string(c.parallel.dp) + " = " + std::to_string(per_step) +
                   "; use a multiple of " + std::to_string(per_step) + ", e.g. " +
                   (below > 0 ? std::to_string(below) + " or " : "") + std::to_string(above));
}

void check_schedule_lengths(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  if (c.optimizer.min_lr > c.optimizer.lr)
    errors.push_back(origins.where("optimizer.min_lr") +
                     ": optimizer.min_lr = " + format_value(c.optimizer.min_lr) +
                     " is larger than optimizer.lr = " + format_value(c.optimizer.lr) +
                     "; min_lr must be <= lr");
  if (c.train.stop_at > c.train.steps)
    errors.push_back(
        origins.where("train.stop_at") + ": train.stop_at = " + std::to_string(c.train.stop_at) +
        " is past train.steps = " + std::to_string(c.train.steps) + "; use stop_at in [0, " +
        std::to_string(c.train.steps) + "] (0 runs to steps)");
}

/// Offload: parameters offload only where they are sharded (stage 3), and travel with the
/// optimizer's shard; the nvme tier needs a directory; the nvme tier's device copies are not
/// built yet, so a CUDA run refuses it. (There is no cpu tier: the schema refuses "cpu".)
void check_offload(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  const ParallelConfig& p = c.parallel;
  if (p.offload_params != OffloadTier::kNone && p.zero_stage != 3)
    errors.push_back(origins.where("parallel.offload_params") + ": parallel.offload_params = \"" +
                     name_of(p.offload_params) +
                     "\" needs parallel.zero_stage = 3 (only stage 3 shards parameters), but "
                     "zero_stage = " +
                     std::to_string(p.zero_stage) +
                     "; set zero_stage = 3 or offload_params = \"none\"");
  if (p.offload_params == OffloadTier::kNvme && p.offload_optimizer != OffloadTier::kNvme)
    errors.push_back(origins.where("parallel.offload_params") +
                     ": parallel.offload_params = \"nvme\" needs parallel.offload_optimizer = "
                     "\"nvme\" (the parameter shard is streamed with the optimizer's), but it "
                     "is \"" +
                     name_of(p.offload_optimizer) + "\"; set offload_optimizer = \"nvme\"");
  const bool nvme =
      p.offload_optimizer == OffloadTier::kNvme || p.offload_params == OffloadTier::kNvme;
  if (nvme && p.nvme_path.empty())
    errors.push_back(origins.where("parallel.nvme_path") +
                     ": the nvme tier is on but parallel.nvme_path is empty; set it to a "
                     "directory on a local disk (each rank writes its own files under it)");
  if (p.offload_optimizer == OffloadTier::kNvme && c.optimizer.name == OptimizerName::kMuon)
    errors.push_back(origins.where("optimizer.name") +
                     ": optimizer.name = \"muon\" keeps its momentum in memory, but "
                     "parallel.offload_optimizer = \"nvme\" puts the optimizer states in the "
                     "nvme tier; use optimizer.name = \"adamw\" with the tier, or "
                     "offload_optimizer = \"none\"");
  if (nvme && c.train.device == Device::kCuda)
    errors.push_back(origins.where("parallel.offload_optimizer") +
                     ": the nvme tier with train.device = \"cuda\" is not implemented yet (it "
                     "streams host tensors); use train.device = \"cpu\" or offload = \"none\"");
}

/// data.skip parses, and the guard's statistics fit its window.
void check_data_and_guard(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  try {
    parse_data_windows(c.data.skip);
  } catch (const std::invalid_argument& e) {
    errors.push_back(origins.where("data.skip") + ": data.skip = " + e.what());
  }
  if (c.data.eod_token >= c.model.vocab)
    errors.push_back(
        origins.where("data.eod_token") + ": data.eod_token = " + std::to_string(c.data.eod_token) +
        " is not a token of the vocabulary (model.vocab = " + std::to_string(c.model.vocab) +
        "); use the tokenizer's end-of-document id, or -1 for none");
  if (c.guard.min_history > c.guard.window)
    errors.push_back(origins.where("guard.min_history") +
                     ": guard.min_history = " + std::to_string(c.guard.min_history) +
                     " is more than guard.window = " + std::to_string(c.guard.window) +
                     "; the guard keeps only window steps: lower min_history or raise window");
}

/// checkpoint.save_initial writes into checkpoint.dir: without one it would save nothing.
void check_checkpoint(TrainConfig& c, const Origins& origins, int, Errors& errors) {
  if (c.checkpoint.save_initial && c.checkpoint.dir.empty())
    errors.push_back(origins.where("checkpoint.save_initial") +
                     ": checkpoint.save_initial = true but checkpoint.dir is empty, so nothing "
                     "would be saved; set checkpoint.dir or remove save_initial");
}

/// The cross-key checks, in order: the world-size check derives dp for check_batch.
using CrossCheck = void (*)(TrainConfig&, const Origins&, int, Errors&);
// check_data_sources comes first: it clears data.source for a mixture, which decides
// where the token-file keys apply.
constexpr CrossCheck kCrossChecks[] = {check_data_sources,
                                       check_keys_apply,
                                       check_model_shape,
                                       check_llama_shape,
                                       check_moe,
                                       check_sequence_parallel,
                                       check_context_parallel,
                                       check_virtual_stages,
                                       check_world_size,
                                       check_expert_parallel,
                                       check_batch,
                                       check_schedule_micro_batches,
                                       check_schedule_lengths,
                                       check_offload,
                                       check_data_and_guard,
                                       check_eval,
                                       check_checkpoint};

}  // namespace

std::vector<std::string> validate_config(TrainConfig& c, const Origins& origins, int world_size) {
  Errors errors;
  for (const KeySpec& spec : config_schema()) {
    const ConfigValue value = spec.field.get(c);
    if (spec.allowed.accepts(value)) continue;
    const std::string name = spec.full_name();
    errors.push_back(origins.where(name) + ": " + name + " = " + format_value(value) +
                     " is not valid; it must be " + spec.allowed.describe());
  }
  // Cross-checks divide by these values: run them only on values that are in range.
  if (!errors.empty()) return errors;
  for (const CrossCheck check : kCrossChecks) check(c, origins, world_size, errors);
  return errors;
}

}  // namespace trident::config_detail
