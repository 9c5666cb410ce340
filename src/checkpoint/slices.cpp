// Box arithmetic: intersection, decomposition of flat ranges, and the tp shard's runs.
#include "checkpoint/slices.h"

#include <ATen/ATen.h>           // Tensor::narrow, Tensor::view
#include <c10/util/Exception.h>  // TORCH_CHECK

#include <algorithm>  // std::max, std::min

namespace trident::checkpoint {

namespace {

int64_t product(const std::vector<int64_t>& v, size_t from) {
  int64_t p = 1;
  for (size_t i = from; i < v.size(); ++i) p *= v[i];
  return p;
}

/// Elements [begin, end) of the sub-tensor at `prefix` (indices of the leading dims).
void decompose(const std::vector<int64_t>& shape, std::vector<int64_t>& prefix, int64_t base,
               int64_t begin, int64_t end, std::vector<FlatPiece>& out) {
  if (begin >= end) return;
  const size_t dim = prefix.size();
  const int64_t inner = product(shape, dim + 1);
  auto emit = [&](int64_t first_row, int64_t rows) {
    Box box;
    box.offsets = prefix;
    box.shape.assign(prefix.size(), 1);
    box.offsets.push_back(first_row);
    box.shape.push_back(rows);
    for (size_t d = dim + 1; d < shape.size(); ++d) {
      box.offsets.push_back(0);
      box.shape.push_back(shape[d]);
    }
    out.push_back({base + first_row * inner, box});
  };
  const int64_t first = begin / inner, last = (end - 1) / inner;
  if (begin % inner == 0 && end % inner == 0) {
    emit(first, end / inner - first);
    return;
  }
  auto partial = [&](int64_t row, int64_t from, int64_t to) {
    prefix.push_back(row);
    decompose(shape, prefix, base + row * inner, from, to, out);
    prefix.pop_back();
  };
  if (first == last) {
    partial(first, begin - first * inner, end - first * inner);
    return;
  }
  int64_t full_begin = first, full_end = last + 1;
  if (begin % inner != 0) {
    partial(first, begin % inner, inner);
    full_begin = first + 1;
  }
  if (end % inner != 0) full_end = last;
  if (full_end > full_begin) emit(full_begin, full_end - full_begin);
  if (end % inner != 0) partial(last, 0, end % inner);
}

}  // namespace

int64_t Box::numel() const { return product(shape, 0); }

bool Box::operator==(const Box& other) const {
  return offsets == other.offsets && shape == other.shape;
}

Box full_box(const std::vector<int64_t>& shape) {
  return {std::vector<int64_t>(shape.size(), 0), shape};
}

Box intersect(const Box& a, const Box& b) {
  TORCH_CHECK(a.shape.size() == b.shape.size(), "boxes of different rank: ", describe(a), " and ",
              describe(b));
  Box out;
  for (size_t d = 0; d < a.shape.size(); ++d) {
    const int64_t lo = std::max(a.offsets[d], b.offsets[d]);
    const int64_t hi = std::min(a.offsets[d] + a.shape[d], b.offsets[d] + b.shape[d]);
    out.offsets.push_back(lo);
    out.shape.push_back(std::max<int64_t>(0, hi - lo));
  }
  return out;
}

std::string describe(const Box& box) {
  std::string s = "[";
  for (size_t d = 0; d < box.shape.size(); ++d) {
    if (d > 0) s += ", ";
    s += std::to_string(box.offsets[d]) + ":" + std::to_string(box.offsets[d] + box.shape[d]);
  }
  return s + "]";
}

std::string shape_text(const std::vector<int64_t>& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}

std::vector<FlatPiece> flat_range_boxes(const std::vector<int64_t>& shape, int64_t begin,
                                        int64_t length) {
  TORCH_CHECK(begin >= 0 && length >= 0 && begin + length <= product(shape, 0),
              "flat range out of bounds");
  std::vector<FlatPiece> out;
  if (length == 0) return out;
  if (shape.empty()) return {{0, Box{}}};
  std::vector<int64_t> prefix;
  decompose(shape, prefix, 0, begin, begin + length, out);
  return out;
}

std::vector<ShardPiece> shard_pieces(const ParamSpec& spec, int tp_rank, int tp_size,
                                     const Box& local) {
  if (spec.shard.replicated()) return {{local, local}};
  const size_t dim = static_cast<size_t>(spec.shard.dim);
  std::vector<ShardPiece> out;
  for (const ShardSlice& s : shard_slices(spec, tp_rank, tp_size)) {
    const int64_t lo = std::max(local.offsets[dim], s.local_start);
    const int64_t hi = std::min(local.offsets[dim] + local.shape[dim], s.local_start + s.length);
    if (hi <= lo) continue;
    ShardPiece piece{local, local};
    piece.local.offsets[dim] = lo;
    piece.local.shape[dim] = hi - lo;
    piece.global.offsets[dim] = lo - s.local_start + s.global_start;
    piece.global.shape[dim] = hi - lo;
    out.push_back(piece);
  }
  return out;
}

at::Tensor narrow_to(const at::Tensor& t, const Box& outer, const Box& inner) {
  at::Tensor v = t;
  for (size_t d = 0; d < outer.shape.size(); ++d) {
    if (inner.offsets[d] == outer.offsets[d] && inner.shape[d] == outer.shape[d]) continue;
    v = v.narrow(static_cast<int64_t>(d), inner.offsets[d] - outer.offsets[d], inner.shape[d]);
  }
  return v;
}

std::vector<std::pair<at::Tensor, Box>> flat_range_pieces(const ParamSpec& spec, int tp_rank,
                                                          int tp_size, const at::Tensor& flat,
                                                          int64_t start) {
  const std::vector<int64_t> shape = local_shape(spec, tp_size);
  std::vector<std::pair<at::Tensor, Box>> out;
  for (const FlatPiece& fp : flat_range_boxes(shape, start, flat.numel())) {
    const at::Tensor box_view =
        flat.narrow(0, fp.flat_begin - start, fp.box.numel()).view(fp.box.shape);
    for (const ShardPiece& sp : shard_pieces(spec, tp_rank, tp_size, fp.box))
      out.emplace_back(narrow_to(box_view, fp.box, sp.local), sp.global);
  }
  return out;
}

std::vector<std::pair<at::Tensor, Box>> shard_views(const ParamSpec& spec, int tp_rank, int tp_size,
                                                    const at::Tensor& shard) {
  const Box all = full_box(shard.sizes().vec());
  std::vector<std::pair<at::Tensor, Box>> out;
  for (const ShardPiece& sp : shard_pieces(spec, tp_rank, tp_size, all))
    out.emplace_back(narrow_to(shard, all, sp.local), sp.global);
  return out;
}

}  // namespace trident::checkpoint
