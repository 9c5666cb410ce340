// Slice files, records and their assembly into an index.
#include "checkpoint/writer.h"

#include <ATen/ATen.h>  // Tensor

#include <algorithm>   // std::sort, std::unique
#include <functional>  // std::greater
#include <map>         // std::map

#include "checkpoint/checkpoint.h"   // CheckpointError
#include "checkpoint/checksum.h"     // to_hex
#include "checkpoint/safetensors.h"  // write_safetensors, dtype_name
#include "config/config.h"           // TrainConfig

namespace trident::checkpoint {

nlohmann::json write_streamed_pieces(const std::string& dir, const std::string& file,
                                     const std::vector<StoredPiece>& layout,
                                     const PieceSource& source,
                                     const std::function<void(size_t)>& after_tensor) {
  if (layout.empty()) return {{"file", nullptr}};
  std::vector<std::string> keys;
  nlohmann::json slices = nlohmann::json::array();
  std::map<std::string, int> count;
  for (const StoredPiece& p : layout) {
    keys.push_back(p.tensor + "#" + std::to_string(count[p.tensor]++));
    slices.push_back({{"tensor", p.tensor},
                      {"key", keys.back()},
                      {"dtype", dtype_name(p.data.scalar_type())},
                      {"global_shape", p.global_shape},
                      {"offsets", p.box.offsets},
                      {"shape", p.box.shape}});
  }
  // Larger elements first, each size in the pieces' order: every offset stays aligned.
  std::vector<size_t> sizes;
  for (const StoredPiece& p : layout) sizes.push_back(p.data.element_size());
  std::sort(sizes.begin(), sizes.end(), std::greater<>());
  sizes.erase(std::unique(sizes.begin(), sizes.end()), sizes.end());
  std::vector<SafetensorsWriter::Entry> entries;
  for (size_t size : sizes)
    for (size_t i = 0; i < layout.size(); ++i)
      if (static_cast<size_t>(layout[i].data.element_size()) == size)
        entries.push_back({keys[i], layout[i].data.scalar_type(), layout[i].box.shape});
  SafetensorsWriter writer(dir + "/" + file, entries, {{"format", "trident"}});
  size_t written = 0;
  for (size_t size : sizes)
    source(size, [&](const at::Tensor& data) {
      writer.append(data);
      if (after_tensor) after_tensor(written);
      ++written;
    });
  const WrittenFile w = writer.finish();
  return {{"file", file}, {"bytes", w.bytes}, {"xxh64", to_hex(w.checksum)}, {"slices", slices}};
}

nlohmann::json write_pieces(const std::string& dir, const std::string& file,
                            const std::vector<StoredPiece>& pieces,
                            const std::function<void(size_t)>& after_tensor) {
  return write_streamed_pieces(
      dir, file, pieces,
      [&](size_t size, const std::function<void(const at::Tensor&)>& emit) {
        for (const StoredPiece& p : pieces)
          if (static_cast<size_t>(p.data.element_size()) == size) emit(p.data);
      },
      after_tensor);
}

void add_records(CheckpointIndex& index, const std::vector<std::string>& records) {
  for (const std::string& text : records) {
    const nlohmann::json r = nlohmann::json::parse(text);
    if (r["file"].is_null()) continue;
    const std::string file = r["file"].get<std::string>();
    index.files[file] = {r["bytes"].get<int64_t>(), r["xxh64"].get<std::string>()};
    for (const auto& s : r["slices"]) {
      const std::string name = s["tensor"].get<std::string>();
      TensorInfo& t = index.tensors[name];
      const std::string dtype = s["dtype"].get<std::string>();
      const auto shape = s["global_shape"].get<std::vector<int64_t>>();
      if (t.slices.empty()) {
        t.dtype = dtype;
        t.shape = shape;
      } else if (t.dtype != dtype || t.shape != shape) {
        throw CheckpointError("save: ranks disagree on the dtype or shape of " + name);
      }
      SliceRef ref;
      ref.file = file;
      ref.key = s["key"].get<std::string>();
      ref.box = {s["offsets"].get<std::vector<int64_t>>(), s["shape"].get<std::vector<int64_t>>()};
      t.slices.push_back(std::move(ref));
    }
  }
  for (const auto& [name, t] : index.tensors) {
    int64_t covered = 0;
    for (const SliceRef& s : t.slices) covered += s.box.numel();
    if (covered != full_box(t.shape).numel())
      throw CheckpointError("save: the slices of " + name + " hold " + std::to_string(covered) +
                            " elements, not " + std::to_string(full_box(t.shape).numel()));
  }
}

nlohmann::json model_json(const TrainConfig& c) {
  nlohmann::json m = {{"arch", name_of(c.model.arch)}, {"layers", c.model.layers},
                      {"hidden", c.model.hidden},      {"heads", c.model.heads},
                      {"vocab", c.model.vocab},        {"padded_vocab", c.padded_vocab()},
                      {"seq_len", c.model.seq_len},    {"dtype", name_of(c.train.precision)}};
  if (c.model.arch == ModelArch::kLlama) {
    m["kv_heads"] = c.model.kv_head_count();
    m["ffn_hidden"] = c.model.ffn_hidden;
    m["rope_theta"] = c.model.rope_theta;
    m["norm_eps"] = c.model.norm_eps;
    m["tie_embeddings"] = c.model.tie_embeddings;
    if (c.model.moe_experts > 0) {  // a dense model's index stays as it was
      m["moe_experts"] = c.model.moe_experts;
      m["moe_top_k"] = c.model.moe_top_k;
      m["moe_ffn_hidden"] =
          c.model.moe_ffn_hidden > 0 ? c.model.moe_ffn_hidden : c.model.ffn_hidden;
      m["moe_layer_every"] = c.model.moe_layer_every;
      if (c.model.moe_capacity_factor > 0) m["moe_capacity_factor"] = c.model.moe_capacity_factor;
      if (c.model.moe_shared_expert) m["moe_shared_expert"] = true;
      if (c.model.moe_router != MoeRouter::kSoftmax) m["moe_router"] = name_of(c.model.moe_router);
    }
  }
  return m;
}

nlohmann::json layout_json(const TrainConfig& c) {
  const auto& p = c.parallel;
  return {{"dp", p.dp},
          {"pp", p.pp},
          {"tp", p.tp},
          {"ep", p.ep},
          {"cp", p.cp},
          {"zero_stage", p.zero_stage},
          {"world_size", p.dp * p.cp * p.pp * p.tp},
          {"schedule", name_of(p.schedule)},
          {"micro_batches", c.micro_batches()}};
}

std::string slice_file_name(int dp, int pp, int tp) {
  return "slices-dp" + std::to_string(dp) + "-pp" + std::to_string(pp) + "-tp" +
         std::to_string(tp) + ".safetensors";
}

}  // namespace trident::checkpoint
