// A read-only memory mapping of a whole file (RAII: the object owns the mapping).
#pragma once

#include <cstddef>  // std::byte, size_t
#include <string>   // std::string

namespace trident::data {

/// A file mapped read-only into memory; unmapped on destruction. Move-only.
class MappedFile {
 public:
  /// Maps `path`; throws DataError naming the file if it cannot be opened or mapped.
  explicit MappedFile(const std::string& path);
  ~MappedFile();
  MappedFile(MappedFile&& other) noexcept;
  MappedFile& operator=(MappedFile&& other) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  /// The first byte of the file (nullptr for an empty file). Page-aligned.
  const std::byte* data() const { return data_; }
  /// The file's size in bytes.
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }
  /// Drops bytes [begin, begin + length) of the mapping from the process's resident set:
  /// the pages stay in the page cache and come back on the next read. A reader of a file
  /// larger than memory (a checkpoint of a model streamed from a tier) calls it behind
  /// itself, so that its RSS does not grow by the file.
  void drop_pages(size_t begin, size_t length) const;

 private:
  void release();

  std::string path_;
  const std::byte* data_ = nullptr;
  size_t size_ = 0;
};

}  // namespace trident::data
