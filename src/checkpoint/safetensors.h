// The safetensors file format, written and read here: an 8-byte little-endian header
// length, a JSON header {name: {dtype, shape, data_offsets}, "__metadata__": {...}}, then
// the tensors' raw little-endian bytes. Reading maps the file and copies nothing.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor, at::ScalarType

#include <cstddef>     // std::byte
#include <cstdint>     // int64_t, uint64_t
#include <functional>  // std::function
#include <map>         // std::map
#include <string>      // std::string
#include <utility>     // std::pair
#include <vector>      // std::vector

#include "checkpoint/checkpoint.h"  // CheckpointError
#include "checkpoint/checksum.h"    // Xxh64
#include "data/mapped_file.h"       // data::MappedFile

namespace trident::checkpoint {

/// safetensors dtype names: "F64", "F32", "BF16", "F16", "I64", "I32", "I16", "I8", "U8",
/// "BOOL". Throws CheckpointError for a type safetensors cannot hold.
std::string dtype_name(at::ScalarType dtype);
at::ScalarType dtype_from_name(const std::string& name);

/// What writing a file produced: its size and XXH64 of every byte.
struct WrittenFile {
  int64_t bytes = 0;
  uint64_t checksum = 0;
};

/// A safetensors file written as a stream: the header first, from each tensor's dtype and
/// shape, then the tensors' bytes one append at a time, so that their data need never all
/// be in memory (a checkpoint of states that come from a tier piece by piece).
class SafetensorsWriter {
 public:
  struct Entry {
    std::string key;
    at::ScalarType dtype;
    std::vector<int64_t> shape;
  };
  /// Creates `path` and writes the header. The bytes follow in the order of `entries`,
  /// which must keep each tensor aligned to its element size (larger elements first).
  SafetensorsWriter(std::string path, const std::vector<Entry>& entries,
                    const std::map<std::string, std::string>& metadata);
  ~SafetensorsWriter();  // closes a file left unfinished (an error on the way)
  SafetensorsWriter(const SafetensorsWriter&) = delete;
  SafetensorsWriter& operator=(const SafetensorsWriter&) = delete;
  /// Writes the next entry's bytes: `t` has its dtype and shape (any device and strides).
  void append(const at::Tensor& t);
  /// Every entry appended: fsyncs and closes the file.
  WrittenFile finish();

 private:
  std::string path_;
  std::vector<Entry> entries_;
  size_t next_ = 0;
  int fd_ = -1;
  int64_t bytes_ = 0;
  Xxh64 hash_;
};

/// Writes `tensors` (any device, any strides) to `path` and fsyncs it. Tensors are laid out
/// by decreasing element size so that each one is aligned. `after_tensor(k)` runs after the
/// k-th tensor's bytes are written (a hook for fault-injection tests).
WrittenFile write_safetensors(const std::string& path,
                              const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata,
                              const std::function<void(size_t)>& after_tensor = {});

/// What a file must be, checked before its header is read: its size (< 0: any) and XXH64
/// as 16 hex digits (empty: not checked).
struct ExpectedFile {
  int64_t bytes = -1;
  std::string xxh64;
};

/// A safetensors file mapped read-only, its header parsed and checked against its size.
class SafetensorsFile {
 public:
  struct Entry {
    at::ScalarType dtype;
    std::vector<int64_t> shape;
    int64_t begin = 0, end = 0;  // byte range inside the file
  };

  using Expected = ExpectedFile;

  /// Throws CheckpointError naming `path` when it is missing, differs from `expected`, or
  /// is not a valid file.
  explicit SafetensorsFile(const std::string& path, const Expected& expected = {});

  const std::string& path() const { return file_.path(); }
  int64_t size() const { return static_cast<int64_t>(file_.size()); }
  const std::map<std::string, Entry>& entries() const { return entries_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }
  /// The entry named `key`, or nullptr.
  const Entry* find(const std::string& key) const;
  /// A CPU tensor over the mapped bytes of `key` (a copy only when the bytes are not
  /// aligned for the dtype). Valid while this object lives; never write to it.
  at::Tensor view(const std::string& key) const;
  /// XXH64 of the whole file (reads every byte, leaving none of them resident).
  uint64_t checksum() const;
  /// Drops the file's pages from the process's resident set (they stay in the page cache;
  /// views stay valid and read them again).
  void drop_pages() const;

 private:
  data::MappedFile file_;
  std::map<std::string, Entry> entries_;
  std::map<std::string, std::string> metadata_;
};

/// fsyncs a directory, so that the entries created or renamed in it are durable.
void fsync_directory(const std::string& dir);

}  // namespace trident::checkpoint
