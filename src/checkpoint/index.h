// The checkpoint index (index.json): format version, step, model, layout, trainer and
// optimizer state, the files with their checksums, and every tensor's global shape, dtype
// and stored slices. Also where a user's path leads: "latest", a step directory, or a
// Hugging Face directory (read as an index with one slice per tensor).
#pragma once
#include <cstdint>            // int64_t
#include <map>                // std::map
#include <nlohmann/json.hpp>  // nlohmann::json
#include <string>             // std::string
#include <vector>             // std::vector

#include "checkpoint/slices.h"  // Box

namespace trident {
struct TrainConfig;
struct ParamSpec;
}  // namespace trident

namespace trident::checkpoint {

constexpr const char* kFormatName = "trident-checkpoint";
constexpr int kFormatVersion = 1;
constexpr const char* kIndexFile = "index.json";
constexpr const char* kLatestFile = "latest";

/// Names of the optimizer-state tensors of parameter `param`.
std::string exp_avg_name(const std::string& param);     // "optimizer.exp_avg/<param>"
std::string exp_avg_sq_name(const std::string& param);  // "optimizer.exp_avg_sq/<param>"
std::string master_name(const std::string& param);      // "optimizer.master/<param>"
/// Whether `tensor` names an optimizer state rather than a model parameter.
bool is_optimizer_state(const std::string& tensor);

/// One stored slice: the box of the global tensor held by tensor `key` of `file`.
struct SliceRef {
  std::string file;
  std::string key;
  Box box;
  bool transposed = false;  // stored as the transpose of box.shape (Hugging Face Conv1D)
};

struct TensorInfo {
  std::string dtype;           // safetensors name: "F64", "F32", "BF16"
  std::vector<int64_t> shape;  // global
  std::vector<SliceRef> slices;
};

struct FileInfo {
  int64_t bytes = -1;
  std::string xxh64;  // empty: no checksum known (a Hugging Face file)
};

struct CheckpointIndex {
  std::string dir;  // the directory the index describes
  bool hugging_face = false;
  int format_version = kFormatVersion;
  int64_t step = 0;
  nlohmann::json model;      // arch, layers, hidden, heads, vocab, padded_vocab, seq_len, dtype
  nlohmann::json layout;     // dp, pp, tp, zero_stage, world_size
  nlohmann::json trainer;    // step, data_position, lr_schedule, rng, loss_scale
  nlohmann::json optimizer;  // kind, step_count, hyper-parameters, zero_stage, master
  nlohmann::json hf_config;  // a Hugging Face directory's config.json
  std::string config_toml;   // the resolved config of the run that wrote it
  std::map<std::string, FileInfo> files;
  std::map<std::string, TensorInfo> tensors;

  /// The path of one of its files.
  std::string path_of(const std::string& file) const { return dir + "/" + file; }
};

nlohmann::json index_to_json(const CheckpointIndex& index);
/// Checks the format name and version first; `dir` is where it was read from.
CheckpointIndex index_from_json(const nlohmann::json& j, const std::string& dir);

/// The checkpoint directory `path` names: "latest" (the step its `latest` file names, in
/// `checkpoint_dir`), a directory holding a `latest` file, a step directory, or a Hugging
/// Face directory; a relative name not found as is is looked up in `checkpoint_dir`.
std::string resolve_checkpoint(const std::string& path, const std::string& checkpoint_dir);
/// Reads the index of a resolved directory (index.json, or a Hugging Face directory).
CheckpointIndex read_index(const std::string& dir);
/// resolve_checkpoint, then read_index.
CheckpointIndex open_checkpoint(const std::string& path, const std::string& checkpoint_dir);

/// Throws CheckpointError, naming the key and the fix, when the checkpoint's model differs
/// from `config`'s (layers, hidden, heads, vocab, seq_len; config.json for Hugging Face).
void check_model(const CheckpointIndex& index, const TrainConfig& config);
/// Throws CheckpointError when the stored tensor `spec.name` cannot fill the parameter:
/// its shape must be the same, but for the embedding's vocabulary padding rows (beyond
/// `vocab`) and, from Hugging Face, more positions than model.seq_len.
void check_shape(const CheckpointIndex& index, const ParamSpec& spec, int64_t vocab);
/// Whether the checkpoint holds model weights only (Hugging Face, or converted from it):
/// loading it starts the optimizer afresh.
bool weights_only(const CheckpointIndex& index);

/// Writes `text` to `path` atomically and durably: `path`.tmp, fsync, rename, fsync of
/// the directory.
void write_file_atomically(const std::string& path, const std::string& text);

}  // namespace trident::checkpoint
