// Token files on disk, memory-mapped and read as they are: llm.c shards, Megatron
// indexed datasets (.bin + .idx) and raw uint16 files; the format is told by content.
#pragma once

#include <cstdint>   // int32_t, int64_t
#include <optional>  // std::optional
#include <string>    // std::string
#include <utility>   // std::move

#include "data/mapped_file.h"  // MappedFile

namespace trident::data {

/// The on-disk layouts a TokenFile reads.
enum class TokenFormat {
  kLlmc,       ///< llm.c shard: 256 int32 header (magic 20240520, version 1, count), uint16
  kMegatron,   ///< Megatron indexed dataset: X.bin tokens + X.idx index (MMIDIDX, version 1)
  kRawUint16,  ///< bare little-endian uint16 tokens (nanoGPT's train.bin)
};

/// Element types of token files (Megatron's dtype codes 1-5 and 8; float codes are refused).
enum class TokenDtype { kUint8, kInt8, kInt16, kInt32, kInt64, kUint16 };

/// "llm.c shard", "Megatron dataset", "raw uint16 tokens".
const char* format_name(TokenFormat format);
/// "uint8", "int8", "int16", "int32", "int64", "uint16".
const char* dtype_name(TokenDtype dtype);
/// Bytes per token of `dtype`.
int64_t dtype_bytes(TokenDtype dtype);
/// A count with thousands separators, for messages: "1,234,567".
std::string format_count(int64_t n);

/// Where a user-given path leads: the format and the files to map.
struct DetectedFormat {
  TokenFormat format;
  std::string data_path;   ///< the file holding the tokens
  std::string index_path;  ///< Megatron's .idx; empty otherwise
};

/// Finds the format of `path` ("X", "X.bin" or "X.idx" for Megatron) from the files'
/// content. Throws DataError when the file is missing or the format is unknown.
DetectedFormat detect_format(const std::string& path);

/// The smallest and largest token id in a file, and where each first occurs.
struct TokenRange {
  int64_t min_token = 0, min_position = 0;
  int64_t max_token = 0, max_position = 0;
};

/// A token file mapped read-only; validated at open. Move-only (it owns the mappings).
class TokenFile {
 public:
  /// Detects the format of `path`, maps it and checks the headers against the sizes.
  /// Throws DataError naming the file and the fix.
  static TokenFile open(const std::string& path);

  TokenFormat format() const { return format_; }
  TokenDtype dtype() const { return dtype_; }
  /// The number of tokens (for Megatron: all sequences concatenated).
  int64_t size() const { return count_; }
  /// Megatron's document count; nullopt for the other formats.
  std::optional<int64_t> documents() const { return documents_; }
  /// The path the user gave.
  const std::string& path() const { return path_; }

  /// Writes tokens [offset, offset + length) to out as int32 (checked range).
  void read(int64_t offset, int64_t length, int32_t* out) const;
  /// Scans every token once.
  TokenRange scan() const;
  /// Scans every token once; throws DataError on a negative id or one ≥ vocab.
  void check_vocab(int64_t vocab) const;

 private:
  TokenFile(std::string path, MappedFile data) : path_(std::move(path)), data_(std::move(data)) {}
  void open_llmc();
  void open_megatron(const std::string& index_path);
  void open_raw();

  std::string path_;
  MappedFile data_;
  std::optional<MappedFile> index_;
  TokenFormat format_ = TokenFormat::kRawUint16;
  TokenDtype dtype_ = TokenDtype::kUint16;
  const std::byte* tokens_ = nullptr;  // first token inside data_
  int64_t count_ = 0;
  std::optional<int64_t> documents_;
};

}  // namespace trident::data
