// Helpers for the data tests: a temporary directory, writers of each token-file
// format, and reading an exception's message.
#pragma once

#include <stdlib.h>  // mkdtemp

#include <cstdint>     // int32_t, int64_t
#include <cstring>     // std::memcpy
#include <filesystem>  // std::filesystem::remove_all, temp_directory_path
#include <fstream>     // std::ofstream
#include <functional>  // std::function
#include <string>      // std::string
#include <vector>      // std::vector

#include "data/data_error.h"  // DataError

namespace trident::data::test_util {

/// A fresh directory under the system's temp directory, removed with its contents.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "trident_data_XXXXXX").string();
    path_ = mkdtemp(pattern.data());
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  /// `name` inside the directory.
  std::string operator/(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

/// Appends the little-endian bytes of `value`.
template <typename T>
void put(std::string& bytes, T value) {
  char raw[sizeof(T)];
  std::memcpy(raw, &value, sizeof(T));
  bytes.append(raw, sizeof(T));
}

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary)
      .write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

/// An llm.c shard: 256 int32 header (magic, version, count), then uint16 tokens.
inline void write_llmc(const std::string& path, const std::vector<uint16_t>& tokens,
                       int32_t version = 1, int64_t header_count = -1) {
  std::string bytes;
  put<int32_t>(bytes, 20240520);
  put<int32_t>(bytes, version);
  put<int32_t>(bytes, static_cast<int32_t>(header_count < 0 ? tokens.size() : header_count));
  bytes.resize(1024, '\0');
  for (uint16_t t : tokens) put<uint16_t>(bytes, t);
  write_bytes(path, bytes);
}

/// A raw uint16 token file.
inline void write_raw(const std::string& path, const std::vector<uint16_t>& tokens) {
  std::string bytes;
  for (uint16_t t : tokens) put<uint16_t>(bytes, t);
  write_bytes(path, bytes);
}

/// A Megatron pair prefix.bin + prefix.idx with one sequence per document, tokens of
/// element type T (dtype code `code`).
template <typename T>
void write_megatron(const std::string& prefix, const std::vector<std::vector<int64_t>>& docs,
                    uint8_t code, uint64_t version = 1) {
  std::string bin, idx("MMIDIDX\0\0", 9);
  put<uint64_t>(idx, version);
  put<uint8_t>(idx, code);
  put<uint64_t>(idx, docs.size());
  put<uint64_t>(idx, docs.size() + 1);
  for (const auto& d : docs) put<int32_t>(idx, static_cast<int32_t>(d.size()));
  int64_t pointer = 0;
  for (const auto& d : docs) {
    put<int64_t>(idx, pointer);
    pointer += static_cast<int64_t>(d.size() * sizeof(T));
  }
  for (size_t k = 0; k <= docs.size(); ++k) put<int64_t>(idx, static_cast<int64_t>(k));
  for (const auto& d : docs) {
    for (int64_t t : d) put<T>(bin, static_cast<T>(t));
  }
  write_bytes(prefix + ".bin", bin);
  write_bytes(prefix + ".idx", idx);
}

/// The message of the DataError `fn` throws ("" if it throws none).
inline std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

}  // namespace trident::data::test_util
