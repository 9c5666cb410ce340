// Writes an llm.c token file atomically: tokens stream into PATH.tmp behind a blank
// header, the header (with the final count) goes in last, then PATH.tmp becomes PATH.
#pragma once

#include <cstdint>  // int32_t, int64_t, uint16_t
#include <cstdio>   // std::FILE
#include <string>   // std::string
#include <vector>   // std::vector

namespace trident::data {

/// An llm.c file being written. Without commit(), the destructor removes PATH.tmp and
/// PATH is never touched.
class LlmcWriter {
 public:
  /// Creates PATH.tmp; throws DataError if it cannot (e.g. a missing directory).
  explicit LlmcWriter(std::string path);
  ~LlmcWriter();
  LlmcWriter(const LlmcWriter&) = delete;
  LlmcWriter& operator=(const LlmcWriter&) = delete;

  /// Appends tokens; each must be in [0, 65535] (the caller checks, with a better message).
  void append(const std::vector<int32_t>& tokens);
  /// Writes the header, flushes to disk and renames PATH.tmp to PATH.
  void commit();
  int64_t count() const { return count_; }

 private:
  void write(const void* data, size_t bytes);

  std::string path_, tmp_path_;
  std::FILE* file_ = nullptr;
  int64_t count_ = 0;
  std::vector<uint16_t> staging_;
};

}  // namespace trident::data
