// Loading in any layout: each rank plans the boxes it needs (its tp shard of every
// parameter, its ZeRO range of every optimizer state), every rank checks the checkpoint
// and its own part of it, and only when all agree are the bytes copied.
#include <ATen/ATen.h>  // Tensor ops

#include <filesystem>  // std::filesystem::exists
#include <memory>      // std::unique_ptr

#include "checkpoint/checkpoint.h"
#include "checkpoint/hf.h"                // check_hf_config
#include "checkpoint/index.h"             // open_checkpoint, CheckpointIndex
#include "checkpoint/ownership.h"         // storage_layout
#include "checkpoint/reader.h"            // SliceReader
#include "checkpoint/trainer_progress.h"  // read_progress
#include "config/config.h"                // TrainConfig, parse_resolved_config, to_toml
#include "models/model_stage.h"           // ModelStage
#include "parallel/agreement.h"           // run_agreed
#include "parallel/parallel_context.h"    // ParallelContext::world
#include "zero/zero_optimizer.h"          // ZeroOptimizer

namespace trident {

using namespace checkpoint;

namespace {

bool is_16_bit(at::ScalarType t) { return t == at::kBFloat16 || t == at::kHalf; }

}  // namespace

void checkpoint::check_model(const CheckpointIndex& index, const TrainConfig& config) {
  if (index.hugging_face) {
    check_hf_config(index, config);
    return;
  }
  const auto& m = config.model;
  // Written by a version that knew only GPT-2 when the arch is missing.
  const std::string arch = index.model.value("arch", "gpt2");
  if (arch != name_of(m.arch))
    throw CheckpointError("checkpoint " + index.dir + " was written for model.arch = \"" + arch +
                          "\" but the config has model.arch = \"" + name_of(m.arch) +
                          "\"; set model.arch = \"" + arch + "\" to load it");
  auto mismatch = [&](const std::string& key, const std::string& theirs, const std::string& ours) {
    throw CheckpointError("checkpoint " + index.dir + " was written for model." + key + " = " +
                          theirs + " but the config has model." + key + " = " + ours +
                          "; set model." + key + " = " + theirs + " to load it");
  };
  std::vector<std::pair<const char*, int64_t>> keys = {{"layers", m.layers},
                                                       {"hidden", m.hidden},
                                                       {"heads", m.heads},
                                                       {"vocab", m.vocab},
                                                       {"seq_len", m.seq_len}};
  if (m.arch == ModelArch::kLlama) {
    keys.emplace_back("kv_heads", m.kv_head_count());
    keys.emplace_back("ffn_hidden", m.ffn_hidden);
  }
  for (const auto& [key, ours] : keys) {
    const int64_t theirs = index.model.at(key).get<int64_t>();
    if (theirs != ours) mismatch(key, std::to_string(theirs), std::to_string(ours));
  }
  if (m.arch != ModelArch::kLlama) return;
  // Mixture-of-Experts: the experts' shapes, and which layers have them; top_k changes the
  // function, not the tensors (0 experts: a dense model, whose index has no such keys).
  const int64_t experts = index.model.value("moe_experts", int64_t{0});
  if (experts != m.moe_experts)
    mismatch("moe_experts", std::to_string(experts), std::to_string(m.moe_experts));
  if (experts > 0) {
    const std::pair<const char*, int64_t> moe_keys[] = {
        {"moe_top_k", m.moe_top_k},
        {"moe_ffn_hidden", m.moe_ffn_hidden > 0 ? m.moe_ffn_hidden : m.ffn_hidden},
        {"moe_layer_every", m.moe_layer_every}};
    for (const auto& [key, ours] : moe_keys) {
      const int64_t theirs = index.model.at(key).get<int64_t>();
      if (theirs != ours) mismatch(key, std::to_string(theirs), std::to_string(ours));
    }
    const bool shared = index.model.value("moe_shared_expert", false);
    if (shared != m.moe_shared_expert)
      mismatch("moe_shared_expert", shared ? "true" : "false",
               m.moe_shared_expert ? "true" : "false");
    const std::string router = index.model.value("moe_router", std::string("softmax"));
    if (router != name_of(m.moe_router))
      mismatch("moe_router", "\"" + router + "\"",
               "\"" + std::string(name_of(m.moe_router)) + "\"");
    const double capacity = index.model.value("moe_capacity_factor", 0.0);
    if (capacity != m.moe_capacity_factor)
      mismatch("moe_capacity_factor", nlohmann::json(capacity).dump(),
               nlohmann::json(m.moe_capacity_factor).dump());
  }
  const bool tied = index.model.at("tie_embeddings").get<bool>();
  if (tied != m.tie_embeddings)
    mismatch("tie_embeddings", tied ? "true" : "false", m.tie_embeddings ? "true" : "false");
  // RoPE's base and the norm's epsilon change the function, not the tensors: a mismatch
  // would load silently and compute another model.
  for (const auto& [key, ours] : {std::pair<const char*, double>{"rope_theta", m.rope_theta},
                                  std::pair<const char*, double>{"norm_eps", m.norm_eps}}) {
    const double theirs = index.model.at(key).get<double>();
    if (theirs != ours) mismatch(key, nlohmann::json(theirs).dump(), nlohmann::json(ours).dump());
  }
}

namespace {

void check_files_exist(const CheckpointIndex& index) {
  for (const auto& [file, info] : index.files)
    if (!std::filesystem::exists(index.path_of(file)))
      throw CheckpointError("checkpoint file " + index.path_of(file) + " is missing (listed in " +
                            index.dir + "/" + kIndexFile +
                            "); the checkpoint is incomplete: restore the file or load another "
                            "checkpoint");
}

}  // namespace

void checkpoint::check_shape(const CheckpointIndex& index, const ParamSpec& spec, int64_t vocab) {
  const auto it = index.tensors.find(spec.name);
  if (it == index.tensors.end())
    throw CheckpointError("checkpoint " + index.dir + " has no tensor " + spec.name +
                          ", which the config's model has; it was written for another model");
  const std::vector<int64_t>& stored = it->second.shape;
  const std::vector<int64_t>& wanted = spec.global_shape;
  if (stored == wanted) return;
  const bool matrices = stored.size() == 2 && wanted.size() == 2 && stored[1] == wanted[1];
  if (matrices && spec.valid_rows >= 0 && stored[0] >= vocab && wanted[0] >= vocab) return;
  if (matrices && index.hugging_face && spec.name == "wpe.weight" && stored[0] >= wanted[0]) return;
  throw CheckpointError("checkpoint " + index.dir + ": tensor " + spec.name + " has shape " +
                        shape_text(stored) + " but the config's model has " + shape_text(wanted) +
                        "; the checkpoint was written for another model");
}

bool checkpoint::weights_only(const CheckpointIndex& index) {
  return index.hugging_face || index.optimizer.value("kind", "") == "none";
}

namespace {

/// The source of parameter `spec`'s values: a 16-bit run's fp32 master weights are the
/// better source for a wider run.
const std::string& weight_source(const CheckpointIndex& index, const ParamSpec& spec,
                                 bool full_precision, std::string& master) {
  master = master_name(spec.name);
  return full_precision && index.tensors.count(master) ? master : spec.name;
}

/// Plans reading the parameters whole in memory. `sharded`: those of a ZeRO stage 3 run
/// are not whole between layers' uses (released, empty) and are left to the optimizer's
/// windows (plan_window); stage 3's persistent parameters are whole and read here.
void plan_weights(SliceReader& reader, ModelStage& model, const ParallelContext& ctx,
                  const CheckpointIndex& index, int64_t vocab, bool sharded = false) {
  const int tp_rank = ctx.coord().tp, tp = ctx.grid().tp();
  const bool full_precision = !is_16_bit(model.params().dtype());
  for (Parameter& p : model.params().params()) {
    check_shape(index, p.spec, vocab);
    if (sharded && p.tensor.numel() == 0) continue;
    std::string master;
    const std::string& source = weight_source(index, p.spec, full_precision, master);
    const bool padded = p.spec.valid_rows >= 0;  // padded vocabulary rows read as zeros
    for (auto& [view, box] : shard_views(p.spec, tp_rank, tp, p.tensor.detach()))
      reader.add(source, box, view, /*zero_outside=*/padded);
  }
}

/// Plans reading one window of the optimizer's state: the states (unless the checkpoint
/// holds weights only) and, for stage 3's sharded parameters, the rank's range of the
/// weights.
void plan_window(SliceReader& reader, const StateWindow& window, const TrainingState& state,
                 const ParallelContext& ctx, const CheckpointIndex& index, bool read_states) {
  ZeroOptimizer& opt = state.optimizer;
  const auto& params = state.model.params().params();
  const int tp_rank = ctx.coord().tp, tp = ctx.grid().tp();
  const bool full_precision = !is_16_bit(state.model.params().dtype());
  const bool separate_master = opt.state_dtype() != state.model.params().dtype();
  for (const auto& [i, v] : window) {
    const ParamSpec& spec = params[i].spec;
    const bool vocab_rows = spec.valid_rows >= 0;  // padding rows read as zero
    auto add = [&](const std::string& source, const at::Tensor& flat) {
      if (index.tensors.count(source) == 0)
        throw CheckpointError("checkpoint " + index.dir + " has no tensor " + source +
                              " (the optimizer state of " + spec.name + ")");
      for (auto& [view, box] : flat_range_pieces(spec, tp_rank, tp, flat, v.start))
        reader.add(source, box, view, vocab_rows);
    };
    if (opt.options().stage == 3 && params[i].tensor.numel() == 0) {
      std::string master;
      add(weight_source(index, spec, full_precision, master), v.param);
    }
    if (weights_only(index)) continue;
    if (read_states) {
      add(exp_avg_name(spec.name), v.exp_avg);
      if (v.exp_avg_sq.defined()) add(exp_avg_sq_name(spec.name), v.exp_avg_sq);  // not Muon's
    }
    if (separate_master)
      add(index.tensors.count(master_name(spec.name)) ? master_name(spec.name) : spec.name,
          v.master);
  }
}

/// Fine-tuning starts from the weights alone: fresh moments, master weights from the
/// parameters just read.
void reset_window(const StateWindow& window) {
  for (const auto& [i, v] : window) {
    v.exp_avg.zero_();
    if (v.exp_avg_sq.defined()) v.exp_avg_sq.zero_();
    if (!v.master.is_same(v.param)) v.master.copy_(v.param);
  }
}

/// optimizer.reset_states: the weights and the trainer's progress go on, the optimizer's
/// moments (Muon's momentum) start afresh, as its step count does.
void zero_moments(const StateWindow& window) {
  for (const auto& [i, v] : window) {
    v.exp_avg.zero_();
    if (v.exp_avg_sq.defined()) v.exp_avg_sq.zero_();
  }
}

/// Whether the checkpoint's optimizer states are of another optimizer than `ours` and the
/// config asks to start fresh ones; throws when it does not ask.
bool check_optimizer(const CheckpointIndex& index, const std::string& ours,
                     const TrainConfig& config) {
  if (weights_only(index)) return false;
  const std::string theirs = index.optimizer.value("kind", "adamw");
  if (theirs == ours) return false;
  if (config.optimizer.reset_states) return true;
  throw CheckpointError("checkpoint " + index.dir + " holds the states of optimizer.name = \"" +
                        theirs + "\" but the config has optimizer.name = \"" + ours +
                        "\"; set optimizer.name = \"" + theirs +
                        "\" to resume it, or optimizer.reset_states = true to go on from its "
                        "weights with fresh optimizer states");
}

}  // namespace

int64_t load_checkpoint(const TrainingState& state, ParallelContext& ctx, const std::string& path,
                        const std::string& checkpoint_dir) {
  Communicator& comm = ctx.world();
  ZeroOptimizer& opt = state.optimizer;
  CheckpointIndex index;
  std::unique_ptr<SliceReader> reader;
  bool fresh_states = false;  // written by the other optimizer, resumed with reset_states
  run_agreed(comm, [&] {
    index = open_checkpoint(path, checkpoint_dir);
    check_model(index, state.config);
    fresh_states = check_optimizer(index, opt.optimizer_name(), state.config);
    check_files_exist(index);
    reader = std::make_unique<SliceReader>(index);
    opt.release_params();  // stage 3: the shards are what gets loaded
    // Every box the windows will read, checked now with placeholders for their memory
    // (the nvme tier's states are read window by window once every rank agrees).
    opt.visit_states(
        [&](const StateWindow& w) { plan_window(*reader, w, state, ctx, index, !fresh_states); },
        StateAccess::kLayout);
    reader->verify();
    reader->clear();
    plan_weights(*reader, state.model, ctx, index, state.config.model.vocab,
                 opt.options().stage == 3);
    reader->verify();
  });
  run_agreed(comm, [&] {
    reader->execute();
    opt.visit_states(
        [&](const StateWindow& w) {
          plan_window(*reader, w, state, ctx, index, !fresh_states);
          reader->execute();
          if (weights_only(index)) reset_window(w);
          if (fresh_states) zero_moments(w);
        },
        StateAccess::kReadWrite);
    opt.set_step_count(
        weights_only(index) || fresh_states ? 0 : index.optimizer.at("step_count").get<int64_t>());
    if (state.progress)
      *state.progress = weights_only(index) ? TrainerProgress{} : read_progress(index.trainer);
  });
  return weights_only(index) ? 0 : index.step;
}

void load_model_weights(ModelStage& model, ParallelContext& ctx, const TrainConfig& config,
                        const std::string& path, const std::string& checkpoint_dir) {
  Communicator& comm = ctx.world();
  CheckpointIndex index;
  std::unique_ptr<SliceReader> reader;
  run_agreed(comm, [&] {
    index = open_checkpoint(path, checkpoint_dir);
    check_model(index, config);
    check_files_exist(index);
    reader = std::make_unique<SliceReader>(index);
    plan_weights(*reader, model, ctx, index, config.model.vocab);
    reader->verify();
  });
  run_agreed(comm, [&] { reader->execute(); });
  // The sigmoid router's biases choose the experts: a model without them is another model.
  if (index.trainer.is_object()) model.set_router_bias(read_progress(index.trainer).router_bias);
}

TrainConfig checkpoint_config(const std::string& path, const std::string& checkpoint_dir,
                              const std::vector<std::string>& overrides, int world_size,
                              SavedParallel saved) {
  const CheckpointIndex index = open_checkpoint(path, checkpoint_dir);
  std::string toml = index.config_toml;
  if (index.hugging_face || toml.empty()) {
    const nlohmann::json& m = index.model;
    toml = "[model]\nlayers = " + m.at("layers").dump() + "\nhidden = " + m.at("hidden").dump() +
           "\nheads = " + m.at("heads").dump() + "\nvocab = " + m.at("vocab").dump() +
           "\nseq_len = " + m.at("seq_len").dump() + "\n";
    if (m.value("arch", "gpt2") == "llama") {
      // JSON writes these as TOML reads them (integers, shortest round-trip floats, booleans).
      toml += "arch = \"llama\"\n";
      for (const char* key :
           {"kv_heads", "ffn_hidden", "rope_theta", "norm_eps", "tie_embeddings"}) {
        std::string value = m.at(key).dump();
        if (m.at(key).is_number_float() && value.find_first_of(".e") == std::string::npos)
          value += ".0";
        toml += std::string(key) + " = " + value + "\n";
      }
      for (const char* key : {"moe_experts", "moe_top_k", "moe_ffn_hidden", "moe_layer_every",
                              "moe_capacity_factor", "moe_shared_expert"})
        if (m.contains(key)) toml += std::string(key) + " = " + m.at(key).dump() + "\n";
    }
  }
  const std::string source = "<checkpoint " + index.dir + ">";
  TrainConfig config = parse_resolved_config(toml, source, {}, /*world_size=*/0);
  config.parallel =
      saved == SavedParallel::kStorageLayout ? storage_layout(config.parallel) : ParallelConfig{};
  return parse_resolved_config(to_toml(config), source, overrides, world_size);
}

}  // namespace trident
