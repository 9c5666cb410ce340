// The geometry of layout-free storage: rectangular boxes of a global tensor, how a rank's
// tp shard and a ZeRO range of its flattened shard map onto such boxes, and views of
// local tensors cut to them. Every stored slice and every read is a box.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>  // int64_t
#include <string>   // std::string
#include <utility>  // std::pair
#include <vector>   // std::vector

#include "tensor_parallel/parameter.h"  // ParamSpec, shard_slices, local_shape

namespace trident::checkpoint {

/// A rectangular box: offsets[d] <= index[d] < offsets[d] + shape[d] in every dimension.
struct Box {
  std::vector<int64_t> offsets;
  std::vector<int64_t> shape;
  int64_t numel() const;
  bool operator==(const Box& other) const;
};

/// The box of a whole tensor of `shape`.
Box full_box(const std::vector<int64_t>& shape);
/// The common part of two boxes of the same rank (numel() == 0 when they do not meet).
Box intersect(const Box& a, const Box& b);
/// "[0:4, 8:16]".
std::string describe(const Box& box);
/// "[4, 16]".
std::string shape_text(const std::vector<int64_t>& shape);

/// A run of a row-major tensor's flattened elements that is a box.
struct FlatPiece {
  int64_t flat_begin = 0;  // index of the box's first element in the flattened tensor
  Box box;
};
/// Elements [begin, begin + length) of a row-major tensor of `shape`, as at most 2*rank-1
/// boxes, each a contiguous run, in order.
std::vector<FlatPiece> flat_range_boxes(const std::vector<int64_t>& shape, int64_t begin,
                                        int64_t length);

/// A box of a tp shard and where it lies in the global tensor.
struct ShardPiece {
  Box local;
  Box global;
};
/// Splits `local` (a box of tp rank `tp_rank`'s shard of `spec`) at the shard's runs: a
/// fused QKV shard is three runs of the global tensor.
std::vector<ShardPiece> shard_pieces(const ParamSpec& spec, int tp_rank, int tp_size,
                                     const Box& local);

/// `t` (whose shape is outer.shape, placed at outer.offsets) narrowed to `inner` ⊆ outer.
at::Tensor narrow_to(const at::Tensor& t, const Box& outer, const Box& inner);

/// Views of a tp shard's parts with their global boxes. `flat` holds elements
/// [start, start + flat.numel()) of the flattened shard (a ZeRO range); each view has its
/// global box's shape and aliases `flat`.
std::vector<std::pair<at::Tensor, Box>> flat_range_pieces(const ParamSpec& spec, int tp_rank,
                                                          int tp_size, const at::Tensor& flat,
                                                          int64_t start);
/// The same for a whole shard (`shard` has the local shape).
std::vector<std::pair<at::Tensor, Box>> shard_views(const ParamSpec& spec, int tp_rank, int tp_size,
                                                    const at::Tensor& shard);

}  // namespace trident::checkpoint
