// Reading parts of stored tensors: a plan of copies (each the overlap of a wanted box with
// a stored slice), checked in full — files present, sizes and checksums, entries matching
// the index, every wanted element stored — before the first byte is copied.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <map>     // std::map
#include <memory>  // std::unique_ptr
#include <string>  // std::string
#include <vector>  // std::vector

#include "checkpoint/index.h"        // CheckpointIndex, Box
#include "checkpoint/safetensors.h"  // SafetensorsFile

namespace trident::checkpoint {

class SliceReader {
 public:
  explicit SliceReader(const CheckpointIndex& index) : index_(index) {}

  /// Plans copying the box `global` of stored tensor `name` into `dst` (shape ==
  /// global.shape; any dtype, converted on copy). With `zero_outside`, the part of `global`
  /// beyond the stored tensor's shape (vocabulary padding rows) becomes zero; otherwise it
  /// is an error. Throws when a wanted element lies in no stored slice.
  void add(const std::string& name, const Box& global, at::Tensor dst, bool zero_outside = false);
  /// Maps every file the plan reads and checks its size, checksum and entries.
  void verify();
  /// Copies, and empties the plan: a later plan may read the files verify() checked (a
  /// load streamed window by window plans each window's copies once it is in memory).
  void execute();
  /// Empties the plan without copying: a plan made to check every file and box of a load
  /// before its windows are copied, whose destinations were placeholders.
  void clear();
  /// Bytes the plan copies out of the files.
  int64_t planned_bytes() const { return planned_bytes_; }

 private:
  struct Copy {
    const SliceRef* slice;
    Box part;  // global coordinates, inside slice->box and the wanted box
    at::Tensor dst;
    Box dst_box;
  };
  /// Throws when the copy's file lacks its entry or holds it in another shape.
  void check_entry(const Copy& c) const;

  const CheckpointIndex& index_;
  std::vector<Copy> copies_;
  std::vector<at::Tensor> zero_first_;
  std::map<std::string, std::unique_ptr<SafetensorsFile>> files_;
  bool verified_ = false;
  int64_t planned_bytes_ = 0;
};

/// A whole stored tensor, in its stored dtype (for export, inspection and tests).
at::Tensor read_global_tensor(const CheckpointIndex& index, const std::string& name);

}  // namespace trident::checkpoint
