// Hugging Face GPT-2 import (a directory read as an index) and export; Llama directories
// are handed to hf_llama.cpp, by config.json's model type or the checkpoint's arch.
#include "checkpoint/hf.h"

#include <ATen/ATen.h>  // Tensor ops

#include <cctype>      // std::isdigit
#include <cmath>       // std::abs
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <functional>  // std::function
#include <random>      // std::random_device

#include "checkpoint/checkpoint.h"   // CheckpointError
#include "checkpoint/hf_llama.h"     // the Llama family's files
#include "checkpoint/index.h"        // write_file_atomically
#include "checkpoint/reader.h"       // read_global_tensor
#include "checkpoint/safetensors.h"  // SafetensorsFile, write_safetensors
#include "config/config.h"           // TrainConfig

namespace trident::checkpoint {

namespace fs = std::filesystem;

namespace {

constexpr const char* kHfWeights = "model.safetensors";
constexpr const char* kHfConfig = "config.json";
constexpr const char* kPrefix = "transformer.";

// Inside a block: trident's name, Hugging Face's, and whether the weight is a Conv1D.
struct BlockName {
  const char* ours;
  const char* hf;
  bool conv1d;
};
constexpr BlockName kBlockNames[] = {
    {"ln_1.weight", "ln_1.weight", false},
    {"ln_1.bias", "ln_1.bias", false},
    {"attn.qkv.weight", "attn.c_attn.weight", true},
    {"attn.qkv.bias", "attn.c_attn.bias", false},
    {"attn.proj.weight", "attn.c_proj.weight", true},
    {"attn.proj.bias", "attn.c_proj.bias", false},
    {"ln_2.weight", "ln_2.weight", false},
    {"ln_2.bias", "ln_2.bias", false},
    {"mlp.fc.weight", "mlp.c_fc.weight", true},
    {"mlp.fc.bias", "mlp.c_fc.bias", false},
    {"mlp.proj.weight", "mlp.c_proj.weight", true},
    {"mlp.proj.bias", "mlp.c_proj.bias", false},
};
constexpr const char* kTopNames[] = {"wte.weight", "wpe.weight", "ln_f.weight", "ln_f.bias"};

/// Splits "h.12.rest" into ("h.12.", "rest"); false for other names.
bool split_block(const std::string& name, std::string& head, std::string& rest) {
  if (name.rfind("h.", 0) != 0) return false;
  size_t i = 2;
  while (i < name.size() && std::isdigit(static_cast<unsigned char>(name[i]))) ++i;
  if (i == 2 || i >= name.size() || name[i] != '.') return false;
  head = name.substr(0, i + 1);
  rest = name.substr(i + 1);
  return true;
}

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw CheckpointError("cannot read " + path);
  try {
    return nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    throw CheckpointError(path + " is not valid JSON: " + e.what());
  }
}

int64_t config_int(const nlohmann::json& c, const std::string& key, const std::string& path) {
  if (!c.contains(key) || !c[key].is_number_integer())
    throw CheckpointError(path + " has no integer \"" + key + "\"; is it a GPT-2 config?");
  return c[key].get<int64_t>();
}

}  // namespace

std::optional<HfName> to_hf_name(const std::string& ours) {
  for (const char* top : kTopNames)
    if (ours == top) return HfName{kPrefix + ours, false};
  std::string head, rest;
  if (!split_block(ours, head, rest)) return std::nullopt;
  for (const BlockName& b : kBlockNames)
    if (rest == b.ours) return HfName{kPrefix + head + b.hf, b.conv1d};
  return std::nullopt;
}

std::optional<HfName> from_hf_name(const std::string& hf) {
  const std::string name = hf.rfind(kPrefix, 0) == 0 ? hf.substr(std::string(kPrefix).size()) : hf;
  for (const char* top : kTopNames)
    if (name == top) return HfName{name, false};
  std::string head, rest;
  if (!split_block(name, head, rest)) return std::nullopt;
  for (const BlockName& b : kBlockNames)
    if (rest == b.hf) return HfName{head + b.ours, b.conv1d};
  return std::nullopt;
}

bool is_hf_directory(const std::string& dir) {
  return (fs::exists(dir + "/" + kHfWeights) ||
          fs::exists(dir + "/model.safetensors.index.json")) &&
         fs::exists(dir + "/" + kHfConfig);
}

CheckpointIndex read_hf_index(const std::string& dir) {
  const std::string config_path = dir + "/" + kHfConfig;
  const nlohmann::json hf_config = read_json(config_path);
  if (is_llama_hf_config(hf_config)) return read_llama_hf_index(dir, hf_config);
  if (!fs::exists(dir + "/" + kHfWeights))
    throw CheckpointError(dir + ": a sharded GPT-2 directory is not supported; save it as one " +
                          kHfWeights);
  CheckpointIndex index;
  index.dir = dir;
  index.hugging_face = true;
  index.hf_config = hf_config;
  const nlohmann::json& c = index.hf_config;
  const int64_t vocab = config_int(c, "vocab_size", config_path);
  const int64_t positions = c.contains("n_positions") ? config_int(c, "n_positions", config_path)
                                                      : config_int(c, "n_ctx", config_path);
  index.model = {{"arch", "gpt2"},
                 {"layers", config_int(c, "n_layer", config_path)},
                 {"hidden", config_int(c, "n_embd", config_path)},
                 {"heads", config_int(c, "n_head", config_path)},
                 {"vocab", vocab},
                 {"padded_vocab", vocab},
                 {"seq_len", positions}};
  index.trainer = {{"step", 0}};
  index.optimizer = nlohmann::json::object();
  index.layout = nlohmann::json::object();

  const SafetensorsFile file(dir + "/" + kHfWeights);
  index.files[kHfWeights] = {file.size(), ""};
  for (const auto& [key, entry] : file.entries()) {
    const std::optional<HfName> ours = from_hf_name(key);
    if (!ours) continue;
    if (ours->transposed && entry.shape.size() != 2)
      throw CheckpointError(file.path() + ": " + key + " should be a matrix");
    TensorInfo info;
    info.dtype = dtype_name(entry.dtype);
    info.shape = entry.shape;
    if (ours->transposed) std::swap(info.shape[0], info.shape[1]);
    info.slices.push_back({kHfWeights, key, full_box(info.shape), ours->transposed});
    index.tensors[ours->name] = std::move(info);
  }
  index.model["dtype"] =
      index.tensors.count("wte.weight") ? index.tensors["wte.weight"].dtype : "F32";
  return index;
}

void check_hf_config(const CheckpointIndex& index, const TrainConfig& config) {
  if (index.model.value("arch", "gpt2") == "llama") return check_llama_hf_config(index, config);
  const std::string path = index.dir + "/" + kHfConfig;
  const nlohmann::json& c = index.hf_config;
  const auto& m = config.model;
  if (m.arch != ModelArch::kGpt2)
    throw CheckpointError("Hugging Face config " + path + ": a GPT-2 but model.arch = \"" +
                          name_of(m.arch) + "\"; set model.arch = \"gpt2\"");
  auto expect = [&](const char* hf_key, int64_t theirs, const char* our_key, int64_t ours) {
    if (theirs != ours)
      throw CheckpointError("Hugging Face config " + path + ": " + hf_key + " = " +
                            std::to_string(theirs) + " but " + our_key + " = " +
                            std::to_string(ours) + "; set " + our_key + " = " +
                            std::to_string(theirs));
  };
  expect("n_layer", index.model["layers"].get<int64_t>(), "model.layers", m.layers);
  expect("n_embd", index.model["hidden"].get<int64_t>(), "model.hidden", m.hidden);
  expect("n_head", index.model["heads"].get<int64_t>(), "model.heads", m.heads);
  expect("vocab_size", index.model["vocab"].get<int64_t>(), "model.vocab", m.vocab);
  const int64_t positions = index.model["seq_len"].get<int64_t>();
  if (m.seq_len > positions)
    throw CheckpointError("Hugging Face config " + path +
                          ": n_positions = " + std::to_string(positions) +
                          " is less than model.seq_len = " + std::to_string(m.seq_len) +
                          "; set model.seq_len <= " + std::to_string(positions));
  if (c.contains("model_type") && c["model_type"] != "gpt2")
    throw CheckpointError("Hugging Face config " + path + ": model_type " + c["model_type"].dump() +
                          " is not gpt2");
  const std::string act = c.value("activation_function", "gelu_new");
  if (act != "gelu_new" && act != "gelu_pytorch_tanh")
    throw CheckpointError("Hugging Face config " + path + ": activation_function \"" + act +
                          "\" is not GPT-2's tanh GELU (gelu_new), which trident computes");
  if (c.contains("n_inner") && !c["n_inner"].is_null() && c["n_inner"] != 4 * m.hidden)
    throw CheckpointError("Hugging Face config " + path + ": n_inner = " + c["n_inner"].dump() +
                          " but trident's MLP is 4 * n_embd = " + std::to_string(4 * m.hidden));
  const double eps = c.value("layer_norm_epsilon", 1e-5);
  if (std::abs(eps - 1e-5) > 1e-12)
    throw CheckpointError("Hugging Face config " + path + ": layer_norm_epsilon = " +
                          std::to_string(eps) + " but trident's layer norms use 1e-5");
}

namespace {

/// Runs `write` into a directory beside `out_dir` and renames it into place, with the files,
/// the directory and its parent on disk (fsync) first: a failed or interrupted export
/// leaves nothing (a failure removes what it wrote).
void write_in_place(const std::string& out_dir,
                    const std::function<void(const std::string&)>& write) {
  const std::string tmp = out_dir + ".tmp_" + std::to_string(std::random_device{}());
  fs::create_directories(tmp);
  try {
    write(tmp);
    fsync_directory(tmp);
    if (fs::exists(out_dir)) fs::remove(out_dir);
    fs::rename(tmp, out_dir);
  } catch (...) {
    std::error_code ec;
    fs::remove_all(tmp, ec);
    throw;
  }
  const fs::path parent = fs::absolute(out_dir).parent_path();
  fsync_directory(parent.string());
}

}  // namespace

void export_hf(const CheckpointIndex& index, const std::string& out_dir) {
  if (fs::exists(out_dir) && !(fs::is_directory(out_dir) && fs::is_empty(out_dir)))
    throw CheckpointError("export: " + out_dir +
                          " exists and is not empty; choose a new "
                          "directory (nothing is overwritten)");
  if (index.model.value("arch", "gpt2") == "llama") {
    write_in_place(out_dir, [&](const std::string& tmp) { write_llama_hf(index, tmp); });
    return;
  }
  const int64_t vocab = index.model.at("vocab").get<int64_t>();
  const int64_t layers = index.model.at("layers").get<int64_t>();
  std::vector<std::pair<std::string, at::Tensor>> tensors;
  std::string dtype;
  for (const auto& [name, info] : index.tensors) {
    if (is_optimizer_state(name)) continue;
    const std::optional<HfName> hf = to_hf_name(name);
    if (!hf) continue;
    // The padding rows go; the dtype stays, so export and import round-trip.
    at::Tensor t = read_global_tensor(index, name);
    if (name == "wte.weight") t = t.narrow(0, 0, vocab);
    dtype = info.dtype;
    if (hf->transposed) t = t.t();
    tensors.emplace_back(hf->name, t.contiguous());
  }
  const size_t expected = 4 + 12 * static_cast<size_t>(layers);
  if (tensors.size() != expected)
    throw CheckpointError("export: checkpoint " + index.dir + " holds " +
                          std::to_string(tensors.size()) + " GPT-2 weights, expected " +
                          std::to_string(expected));
  const int64_t positions = index.model.at("seq_len").get<int64_t>();
  const nlohmann::json config = {
      {"architectures", nlohmann::json::array({"GPT2LMHeadModel"})},
      {"model_type", "gpt2"},
      {"activation_function", "gelu_new"},
      {"n_layer", layers},
      {"n_embd", index.model.at("hidden")},
      {"n_head", index.model.at("heads")},
      {"n_positions", positions},
      {"n_ctx", positions},
      {"n_inner", nullptr},
      {"vocab_size", vocab},
      {"layer_norm_epsilon", 1e-5},
      {"initializer_range", 0.02},
      {"attn_pdrop", 0.1},
      {"embd_pdrop", 0.1},
      {"resid_pdrop", 0.1},
      {"scale_attn_weights", true},
      {"scale_attn_by_inverse_layer_idx", false},
      {"reorder_and_upcast_attn", false},
      {"tie_word_embeddings", true},
      {"use_cache", true},
      {"bos_token_id", vocab - 1},
      {"eos_token_id", vocab - 1},
      {"torch_dtype", hf_torch_dtype(dtype)},
  };
  write_in_place(out_dir, [&](const std::string& tmp) {
    write_safetensors(tmp + "/" + kHfWeights, tensors, {{"format", "pt"}});
    write_file_atomically(tmp + "/" + kHfConfig, config.dump(2) + "\n");
  });
}

}  // namespace trident::checkpoint
