// Hugging Face Llama and Mixtral import (a directory read as an index) and export.
#include "checkpoint/hf_llama.h"

#include <ATen/ATen.h>  // Tensor ops

#include <cctype>      // std::isdigit
#include <filesystem>  // std::filesystem::exists
#include <fstream>     // std::ifstream
#include <map>         // std::map
#include <memory>      // std::unique_ptr
#include <set>         // std::set

#include "checkpoint/checkpoint.h"   // CheckpointError
#include "checkpoint/index.h"        // write_file_atomically
#include "checkpoint/reader.h"       // read_global_tensor
#include "checkpoint/safetensors.h"  // SafetensorsFile, write_safetensors, dtype_name
#include "config/config.h"           // TrainConfig

namespace trident::checkpoint {

namespace {

constexpr const char* kWeights = "model.safetensors";
constexpr const char* kShardIndex = "model.safetensors.index.json";
constexpr const char* kConfig = "config.json";

// Inside block i: trident's name and Hugging Face's (both [out, in]: no transposes).
struct BlockName {
  const char* ours;
  const char* hf;
};
constexpr BlockName kBlockNames[] = {
    {"norm_1.weight", "input_layernorm.weight"},
    {"attn.q.weight", "self_attn.q_proj.weight"},
    {"attn.k.weight", "self_attn.k_proj.weight"},
    {"attn.v.weight", "self_attn.v_proj.weight"},
    {"attn.o.weight", "self_attn.o_proj.weight"},
    {"norm_2.weight", "post_attention_layernorm.weight"},
    {"mlp.gate.weight", "mlp.gate_proj.weight"},
    {"mlp.up.weight", "mlp.up_proj.weight"},
    {"mlp.down.weight", "mlp.down_proj.weight"},
};

// An MoE layer's router and experts: trident's "moe." names and Mixtral's
// "block_sparse_moe." ones (w1 the gate, w2 the down projection, w3 the up one).
constexpr BlockName kExpertNames[] = {
    {"gate.weight", "w1.weight"}, {"down.weight", "w2.weight"}, {"up.weight", "w3.weight"}};
constexpr const char* kOurRouter = "moe.router.weight";
constexpr const char* kHfRouter = "block_sparse_moe.gate.weight";

/// Splits "<prefix>12.rest" into ("12", "rest"); false for other names.
bool split_block(const std::string& name, const std::string& prefix, std::string& index,
                 std::string& rest) {
  if (name.rfind(prefix, 0) != 0) return false;
  size_t i = prefix.size();
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  if (i == prefix.size() || i >= name.size() || name[i] != '.') return false;
  index = name.substr(prefix.size(), i - prefix.size());
  rest = name.substr(i + 1);
  return true;
}

int64_t int_of(const nlohmann::json& c, const std::string& key, const std::string& path) {
  if (!c.contains(key) || !c[key].is_number_integer())
    throw CheckpointError(path + " has no integer \"" + key + "\"; is it a Llama config?");
  return c[key].get<int64_t>();
}

/// Hugging Face's defaults (LlamaConfig) for keys a config.json may leave out (or set to
/// null); a value of the wrong type is refused, naming the file.
double number_of(const nlohmann::json& c, const std::string& key, double fallback,
                 const std::string& path) {
  if (!c.contains(key) || c[key].is_null()) return fallback;
  if (!c[key].is_number())
    throw CheckpointError(path + ": \"" + key + "\" is not a number; is it a Llama config?");
  return c[key].get<double>();
}
double rope_theta_of(const nlohmann::json& c, const std::string& path) {
  return number_of(c, "rope_theta", 10000.0, path);
}
double norm_eps_of(const nlohmann::json& c, const std::string& path) {
  return number_of(c, "rms_norm_eps", 1e-6, path);
}
bool tied_of(const nlohmann::json& c, const std::string& path) {
  const char* key = "tie_word_embeddings";
  if (!c.contains(key) || c[key].is_null()) return false;
  if (!c[key].is_boolean())
    throw CheckpointError(path + ": \"" + key + "\" is not true or false; is it a Llama config?");
  return c[key].get<bool>();
}

/// Hugging Face tensor name -> the file holding it: one file, or a sharded index.
std::map<std::string, std::string> weight_files(const std::string& dir) {
  std::map<std::string, std::string> where;
  if (std::filesystem::exists(dir + "/" + kWeights)) {
    const SafetensorsFile file(dir + "/" + kWeights);
    for (const auto& [key, entry] : file.entries()) where[key] = kWeights;
    return where;
  }
  const std::string path = dir + "/" + kShardIndex;
  std::ifstream in(path);
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(path + " is not valid JSON: " + e.what());
  }
  if (!j.contains("weight_map") || !j["weight_map"].is_object())
    throw CheckpointError(path + " has no \"weight_map\" object");
  for (const auto& [key, file] : j["weight_map"].items()) {
    if (!file.is_string())
      throw CheckpointError(path + ": the weight file of " + key + " is not a string");
    const std::string name = file.get<std::string>();
    if (name.find('/') != std::string::npos)
      throw CheckpointError(path + ": weight file \"" + name + "\" is not in the directory");
    where[key] = name;
  }
  return where;
}

}  // namespace

bool is_llama_hf_config(const nlohmann::json& c) {
  if (!c.is_object()) return false;
  if (c.contains("model_type") && (c["model_type"] == "llama" || c["model_type"] == "mixtral"))
    return true;
  if (c.contains("architectures") && c["architectures"].is_array())
    for (const auto& a : c["architectures"])
      if (a == "LlamaForCausalLM" || a == "MixtralForCausalLM") return true;
  return false;
}

std::optional<std::string> to_hf_llama_name(const std::string& ours) {
  if (ours == "wte.weight" || ours == "embed.weight") return "model.embed_tokens.weight";
  if (ours == "norm_f.weight") return "model.norm.weight";
  if (ours == "lm_head.weight") return "lm_head.weight";
  std::string index, rest;
  if (!split_block(ours, "h.", index, rest)) return std::nullopt;
  const std::string layer = "model.layers." + index + ".";
  for (const BlockName& b : kBlockNames)
    if (rest == b.ours) return layer + b.hf;
  if (rest == kOurRouter) return layer + kHfRouter;
  std::string expert, part;
  if (split_block(rest, "moe.experts.", expert, part))
    for (const BlockName& b : kExpertNames)
      if (part == b.ours) return layer + "block_sparse_moe.experts." + expert + "." + b.hf;
  return std::nullopt;
}

std::optional<std::string> from_hf_llama_name(const std::string& hf, bool tied) {
  if (hf == "model.embed_tokens.weight") return std::string(tied ? "wte.weight" : "embed.weight");
  if (hf == "model.norm.weight") return std::string("norm_f.weight");
  if (hf == "lm_head.weight") {
    if (tied) return std::nullopt;  // a copy of the embedding some files keep
    return hf;
  }
  std::string index, rest;
  if (!split_block(hf, "model.layers.", index, rest)) return std::nullopt;
  const std::string layer = "h." + index + ".";
  for (const BlockName& b : kBlockNames)
    if (rest == b.hf) return layer + b.ours;
  if (rest == kHfRouter) return layer + kOurRouter;
  std::string expert, part;
  if (split_block(rest, "block_sparse_moe.experts.", expert, part))
    for (const BlockName& b : kExpertNames)
      if (part == b.hf) return layer + "moe.experts." + expert + "." + b.ours;
  return std::nullopt;
}

CheckpointIndex read_llama_hf_index(const std::string& dir, const nlohmann::json& c) {
  const std::string path = dir + "/" + kConfig;
  CheckpointIndex index;
  index.dir = dir;
  index.hugging_face = true;
  index.hf_config = c;
  const int64_t heads = int_of(c, "num_attention_heads", path);
  const int64_t vocab = int_of(c, "vocab_size", path);
  const bool tied = tied_of(c, path);
  index.model = {
      {"arch", "llama"},
      {"layers", int_of(c, "num_hidden_layers", path)},
      {"hidden", int_of(c, "hidden_size", path)},
      {"heads", heads},
      {"kv_heads", c.contains("num_key_value_heads") && !c["num_key_value_heads"].is_null()
                       ? int_of(c, "num_key_value_heads", path)
                       : heads},
      {"ffn_hidden", int_of(c, "intermediate_size", path)},
      {"vocab", vocab},
      {"padded_vocab", vocab},
      {"seq_len", int_of(c, "max_position_embeddings", path)},
      {"rope_theta", rope_theta_of(c, path)},
      {"norm_eps", norm_eps_of(c, path)},
      {"tie_embeddings", tied}};
  // Mixtral: every layer's MLP is E experts of intermediate_size, a token going to its top k.
  if (c.contains("num_local_experts") && !c["num_local_experts"].is_null()) {
    index.model["moe_experts"] = int_of(c, "num_local_experts", path);
    index.model["moe_top_k"] = int_of(c, "num_experts_per_tok", path);
    index.model["moe_ffn_hidden"] = index.model["ffn_hidden"];
    index.model["moe_layer_every"] = 1;
  }
  index.trainer = {{"step", 0}};
  index.optimizer = nlohmann::json::object();
  index.layout = nlohmann::json::object();

  const std::map<std::string, std::string> where = weight_files(dir);
  std::map<std::string, std::unique_ptr<SafetensorsFile>> files;
  for (const auto& [key, file] : where) {
    const std::optional<std::string> ours = from_hf_llama_name(key, tied);
    if (!ours) continue;
    auto& f = files[file];
    if (!f) {
      const std::string file_path = dir + "/" + file;
      if (!std::filesystem::exists(file_path))
        throw CheckpointError(file_path + " is missing (named in " + dir + "/" + kShardIndex + ")");
      f = std::make_unique<SafetensorsFile>(file_path);
      index.files[file] = {f->size(), ""};
    }
    const SafetensorsFile::Entry* entry = f->find(key);
    if (entry == nullptr) throw CheckpointError(f->path() + " has no tensor " + key);
    TensorInfo info;
    info.dtype = dtype_name(entry->dtype);
    info.shape = entry->shape;
    info.slices.push_back({file, key, full_box(info.shape), false});
    index.tensors[*ours] = std::move(info);
  }
  const std::string embed = tied ? "wte.weight" : "embed.weight";
  index.model["dtype"] = index.tensors.count(embed) ? index.tensors[embed].dtype : "F32";
  return index;
}

void check_llama_hf_config(const CheckpointIndex& index, const TrainConfig& config) {
  const std::string path = index.dir + "/" + kConfig;
  const nlohmann::json& c = index.hf_config;
  const auto& m = config.model;
  const std::string where = "Hugging Face config " + path + ": ";
  if (m.arch != ModelArch::kLlama)
    throw CheckpointError(where + "a Llama (LlamaForCausalLM) but model.arch = \"" +
                          name_of(m.arch) + "\"; set model.arch = \"llama\"");
  auto expect = [&](const char* hf_key, const nlohmann::json& theirs, const char* our_key,
                    const nlohmann::json& ours) {
    if (theirs != ours)
      throw CheckpointError(where + hf_key + " = " + theirs.dump() + " but " + our_key + " = " +
                            ours.dump() + "; set " + our_key + " = " + theirs.dump());
  };
  const nlohmann::json& im = index.model;
  expect("num_hidden_layers", im["layers"], "model.layers", m.layers);
  expect("hidden_size", im["hidden"], "model.hidden", m.hidden);
  expect("num_attention_heads", im["heads"], "model.heads", m.heads);
  expect("num_key_value_heads", im["kv_heads"], "model.kv_heads", m.kv_head_count());
  const int64_t experts = im.value("moe_experts", int64_t{0});
  expect("num_local_experts", experts, "model.moe_experts", m.moe_experts);
  if (experts > 0) {  // Mixtral: intermediate_size is the experts' width; no dense MLP
    expect("num_experts_per_tok", im["moe_top_k"], "model.moe_top_k", m.moe_top_k);
    expect("intermediate_size", im["moe_ffn_hidden"], "model.moe_ffn_hidden",
           m.moe_ffn_hidden > 0 ? m.moe_ffn_hidden : m.ffn_hidden);
    expect("(every layer MoE)", 1, "model.moe_layer_every", m.moe_layer_every);
    expect("(a softmax router)", "softmax", "model.moe_router", name_of(m.moe_router));
    if (c.value("router_jitter_noise", 0.0) != 0.0)
      throw CheckpointError(where + "router_jitter_noise " + c["router_jitter_noise"].dump() +
                            " is not 0; trident's router adds no noise");
  } else {
    expect("intermediate_size", im["ffn_hidden"], "model.ffn_hidden", m.ffn_hidden);
  }
  expect("vocab_size", im["vocab"], "model.vocab", m.vocab);
  expect("rope_theta", im["rope_theta"], "model.rope_theta", m.rope_theta);
  expect("rms_norm_eps", im["norm_eps"], "model.norm_eps", m.norm_eps);
  expect("tie_word_embeddings", im["tie_embeddings"], "model.tie_embeddings", m.tie_embeddings);
  const int64_t positions = im["seq_len"].get<int64_t>();
  if (m.seq_len > positions)
    throw CheckpointError(where + "max_position_embeddings = " + std::to_string(positions) +
                          " is less than model.seq_len = " + std::to_string(m.seq_len) +
                          "; set model.seq_len <= " + std::to_string(positions));
  // What trident does not compute: say so rather than load another function.
  if (c.value("hidden_act", "silu") != "silu")
    throw CheckpointError(where + "hidden_act " + c["hidden_act"].dump() +
                          " is not SiLU, which trident's SwiGLU computes");
  if (c.contains("sliding_window") && c["sliding_window"].is_number_integer() &&
      c["sliding_window"].get<int64_t>() < m.seq_len)
    throw CheckpointError(where + "sliding_window = " + c["sliding_window"].dump() +
                          " is less than model.seq_len = " + std::to_string(m.seq_len) +
                          "; trident's attention sees the whole sequence");
  if (c.contains("rope_scaling") && !c["rope_scaling"].is_null())
    throw CheckpointError(where + "rope_scaling " + c["rope_scaling"].dump() +
                          " is not supported; trident computes the default RoPE");
  if (c.value("attention_bias", false) || c.value("mlp_bias", false))
    throw CheckpointError(where +
                          "attention_bias / mlp_bias are set; trident's Llama has no biases");
  if (c.contains("head_dim") && !c["head_dim"].is_null() &&
      c["head_dim"] != nlohmann::json(m.hidden / m.heads))
    throw CheckpointError(where + "head_dim = " + c["head_dim"].dump() +
                          " is not hidden_size / num_attention_heads = " +
                          std::to_string(m.hidden / m.heads) + ", which trident assumes");
  for (const auto& [name, info] : index.tensors)
    if (info.dtype != "F64" && info.dtype != "F32" && info.dtype != "BF16" && info.dtype != "F16")
      throw CheckpointError(where + "tensor " + name + " has dtype " + info.dtype +
                            "; trident reads F64, F32, BF16 and F16 files");
}

std::string hf_torch_dtype(const std::string& dtype) {
  static const std::map<std::string, std::string> names = {
      {"F64", "float64"}, {"F32", "float32"}, {"BF16", "bfloat16"}, {"F16", "float16"}};
  const auto it = names.find(dtype);
  return it == names.end() ? "float32" : it->second;
}

void write_llama_hf(const CheckpointIndex& index, const std::string& tmp_dir) {
  const nlohmann::json& m = index.model;
  const int64_t experts = m.value("moe_experts", int64_t{0});
  if (experts > 0 && m.at("moe_layer_every").get<int64_t>() != 1)
    throw CheckpointError("export: checkpoint " + index.dir +
                          " has dense layers between its "
                          "MoE layers (model.moe_layer_every = " +
                          m.at("moe_layer_every").dump() +
                          "); Hugging Face's Mixtral format makes every layer MoE");
  if (m.value("moe_shared_expert", false))
    throw CheckpointError("export: checkpoint " + index.dir +
                          " has a shared expert "
                          "(model.moe_shared_expert = true), which Hugging Face's Mixtral "
                          "format does not have");
  if (m.value("moe_router", std::string("softmax")) != "softmax")
    throw CheckpointError("export: checkpoint " + index.dir + " routes with the " +
                          m.at("moe_router").get<std::string>() +
                          " router (model.moe_router); Hugging Face's Mixtral routes by softmax "
                          "and would compute another function");
  if (m.value("moe_capacity_factor", 0.0) > 0)
    throw CheckpointError("export: checkpoint " + index.dir +
                          " drops tokens beyond a capacity "
                          "(model.moe_capacity_factor = " +
                          m.at("moe_capacity_factor").dump() +
                          "); Hugging Face's Mixtral routes dropless and would compute another "
                          "function");
  const int64_t vocab = m.at("vocab").get<int64_t>();
  const int64_t layers = m.at("layers").get<int64_t>();
  const bool tied = m.at("tie_embeddings").get<bool>();
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  std::string dtype;
  for (const auto& [name, info] : index.tensors) {
    if (is_optimizer_state(name)) continue;
    const std::optional<std::string> hf = to_hf_llama_name(name);
    if (!hf) continue;
    at::Tensor t = read_global_tensor(index, name);
    // The vocabulary's padding rows go; the dtype stays, so export and import round-trip.
    if (name == "wte.weight" || name == "embed.weight" || name == "lm_head.weight")
      t = t.narrow(0, 0, vocab);
    dtype = info.dtype;
    tensors.emplace_back(*hf, t.contiguous());
  }
  // Per layer: 2 norms and 4 attention matrices, then 3 MLP matrices or a router and 3 per
  // expert.
  const size_t per_layer = experts > 0 ? 7 + 3 * static_cast<size_t>(experts) : 9;
  const size_t expected = 2 + per_layer * static_cast<size_t>(layers) + (tied ? 0 : 1);
  if (tensors.size() != expected)
    throw CheckpointError("export: checkpoint " + index.dir + " holds " +
                          std::to_string(tensors.size()) + " weights, expected " +
                          std::to_string(expected));
  const int64_t hidden = m.at("hidden").get<int64_t>(), heads = m.at("heads").get<int64_t>();
  nlohmann::json config = {
      {"architectures", nlohmann::json::array({"LlamaForCausalLM"})},
      {"model_type", "llama"},
      {"hidden_act", "silu"},
      {"hidden_size", hidden},
      {"intermediate_size", m.at("ffn_hidden")},
      {"num_hidden_layers", layers},
      {"num_attention_heads", heads},
      {"num_key_value_heads", m.at("kv_heads")},
      {"head_dim", hidden / heads},
      {"vocab_size", vocab},
      {"max_position_embeddings", m.at("seq_len")},
      {"rms_norm_eps", m.at("norm_eps")},
      {"rope_theta", m.at("rope_theta")},
      {"rope_scaling", nullptr},
      {"tie_word_embeddings", tied},
      {"attention_bias", false},
      {"attention_dropout", 0.0},
      {"mlp_bias", false},
      {"pretraining_tp", 1},
      {"initializer_range", 0.02},
      {"use_cache", true},
      {"bos_token_id", nullptr},
      {"eos_token_id", nullptr},
      {"torch_dtype", hf_torch_dtype(dtype)},
  };
  if (experts > 0) {  // Mixtral's keys; the Llama-only ones go
    config["architectures"] = nlohmann::json::array({"MixtralForCausalLM"});
    config["model_type"] = "mixtral";
    config["intermediate_size"] = m.at("moe_ffn_hidden");
    config["num_local_experts"] = experts;
    config["num_experts_per_tok"] = m.at("moe_top_k");
    config["output_router_logits"] = false;
    config["router_jitter_noise"] = 0.0;
    config["sliding_window"] = nullptr;
    for (const char* key : {"mlp_bias", "attention_bias", "pretraining_tp", "head_dim"})
      config.erase(key);
  }
  write_safetensors(tmp_dir + "/" + kWeights, tensors, {{"format", "pt"}});
  write_file_atomically(tmp_dir + "/" + kConfig, config.dump(2) + "\n");
}

}  // namespace trident::checkpoint
