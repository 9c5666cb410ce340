// Writing checkpoints, shared by save and convert: one rank's pieces into its safetensors
// file (returning the record rank 0 gathers), the index assembled from every rank's
// record and checked to cover every tensor once, and the model/layout parts of an index.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstddef>            // size_t
#include <functional>         // std::function
#include <nlohmann/json.hpp>  // nlohmann::json
#include <string>             // std::string
#include <vector>             // std::vector

#include "checkpoint/index.h"  // CheckpointIndex, Box

namespace trident {
struct TrainConfig;
}

namespace trident::checkpoint {

/// A box of a global tensor and the data a rank stores for it (shape == box.shape).
struct StoredPiece {
  std::string tensor;
  at::Tensor data;
  Box box;
  std::vector<int64_t> global_shape;
};

/// Hands the data of a file's pieces whose element size is `element_size` to `emit`, in
/// the pieces' order (a streamed save: they come window by window from a tier).
using PieceSource =
    std::function<void(size_t element_size, const std::function<void(const at::Tensor&)>& emit)>;

/// Writes the pieces described by `layout` (their data may be meta tensors: only dtype and
/// shape are read) to `dir`/`file`, their data taken from `source` once per element size,
/// larger first, and returns the record as write_pieces does.
nlohmann::json write_streamed_pieces(const std::string& dir, const std::string& file,
                                     const std::vector<StoredPiece>& layout,
                                     const PieceSource& source,
                                     const std::function<void(size_t)>& after_tensor = {});

/// Writes `pieces` to `dir`/`file` (nothing when there are none) and returns the record
/// {"file", "bytes", "xxh64", "slices": [{tensor, key, dtype, global_shape, offsets,
/// shape}]} ({"file": null} when nothing was written).
nlohmann::json write_pieces(const std::string& dir, const std::string& file,
                            const std::vector<StoredPiece>& pieces,
                            const std::function<void(size_t)>& after_tensor = {});

/// Adds every rank's record to `index`; throws CheckpointError when a tensor's slices do
/// not cover it exactly once (which would be a bug in the writer).
void add_records(CheckpointIndex& index, const std::vector<std::string>& records);

/// The index's "model" and "layout" of a config.
nlohmann::json model_json(const TrainConfig& config);
nlohmann::json layout_json(const TrainConfig& config);

/// The slice file of the rank at (dp, pp, tp): "slices-dp0-pp1-tp0.safetensors".
std::string slice_file_name(int dp, int pp, int tp);

}  // namespace trident::checkpoint
