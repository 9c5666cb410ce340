// Hugging Face GPT-2 files: the names and Conv1D layout of GPT2LMHeadModel's weights,
// reading a directory (model.safetensors + config.json) as a checkpoint index, checking
// its config against trident's, and exporting a checkpoint to such a directory.
#pragma once
#include <optional>  // std::optional
#include <string>    // std::string
#include <vector>    // std::vector

#include "checkpoint/index.h"  // CheckpointIndex

namespace trident {
struct TrainConfig;
}

namespace trident::checkpoint {

/// A trident parameter's Hugging Face name ("transformer.h.0.attn.c_attn.weight") and
/// whether HF stores it transposed (Conv1D weights are [in, out]; ours are [out, in]).
struct HfName {
  std::string name;
  bool transposed = false;
};
std::optional<HfName> to_hf_name(const std::string& ours);
/// The inverse, for names with or without the "transformer." prefix; nullopt for tensors
/// trident has no use for (lm_head.weight, which is tied, and attention mask buffers).
std::optional<HfName> from_hf_name(const std::string& hf);

/// Whether `dir` holds config.json and model.safetensors (or, for a Llama, a sharded
/// model.safetensors.index.json).
bool is_hf_directory(const std::string& dir);
/// The directory as an index: one slice per tensor, in trident's names and orientation;
/// model (layers, hidden, heads, vocab, seq_len = n_positions) from config.json. A Llama's
/// config.json (model_type "llama") is read by read_llama_hf_index.
CheckpointIndex read_hf_index(const std::string& dir);
/// Throws CheckpointError naming config.json when its model differs from `config`'s.
void check_hf_config(const CheckpointIndex& index, const TrainConfig& config);

/// Writes `out_dir`/model.safetensors (the checkpoint's dtype, HF names and layout,
/// vocabulary padding removed, no lm_head) and `out_dir`/config.json from the checkpoint
/// `index`; a Llama checkpoint as LlamaForCausalLM files (see hf_llama.h).
/// Single process; `out_dir` must not exist or be empty.
void export_hf(const CheckpointIndex& index, const std::string& out_dir);

}  // namespace trident::checkpoint
