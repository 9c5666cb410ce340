// Hugging Face Llama files (LlamaForCausalLM): the weight names, reading a directory
// (model.safetensors or a sharded model.safetensors.index.json, with config.json) as a
// checkpoint index, checking config.json against trident's config key by key, and export.
#pragma once
#include <nlohmann/json.hpp>  // nlohmann::json
#include <optional>           // std::optional
#include <string>             // std::string

#include "checkpoint/index.h"  // CheckpointIndex

namespace trident {
struct TrainConfig;
}

namespace trident::checkpoint {

/// Whether a config.json describes a model trident reads as model.arch = "llama".
bool is_llama_hf_config(const nlohmann::json& config);

/// The Hugging Face name of a trident Llama parameter ("h.3.attn.q.weight" ->
/// "model.layers.3.self_attn.q_proj.weight"); nullopt for names it does not know.
std::optional<std::string> to_hf_llama_name(const std::string& ours);
/// The inverse; `tied` says whether the token embedding is trident's "wte.weight" (shared
/// with the head, and lm_head.weight is then ignored) or "embed.weight".
std::optional<std::string> from_hf_llama_name(const std::string& hf, bool tied);

/// The directory as an index; `config` is its parsed config.json.
CheckpointIndex read_llama_hf_index(const std::string& dir, const nlohmann::json& config);
/// Throws CheckpointError naming config.json and the config key for each difference.
void check_llama_hf_config(const CheckpointIndex& index, const TrainConfig& config);
/// config.json's torch_dtype of a safetensors dtype ("F64" -> "float64"); "float32" for one
/// it has no name for.
std::string hf_torch_dtype(const std::string& dtype);
/// Writes model.safetensors (the checkpoint's dtype, vocabulary padding removed) and a
/// config.json that transformers' LlamaForCausalLM reads, into the new directory `tmp_dir`.
void write_llama_hf(const CheckpointIndex& index, const std::string& tmp_dir);

}  // namespace trident::checkpoint
