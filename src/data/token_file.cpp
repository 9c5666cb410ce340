// Token files: format detection, header validation against file sizes, typed reads
// into int32, and the one-pass vocabulary scan.
#include "data/token_file.h"

#include <sys/stat.h>  // stat

#include <cstring>      // std::memcpy, std::memcmp
#include <limits>       // std::numeric_limits
#include <type_traits>  // std::remove_cv_t, std::remove_pointer_t

#include "data/data_error.h"  // DataError

namespace trident::data {
namespace {

// Every format is little-endian and read in place, without byte swapping.
#if defined(__BYTE_ORDER__)
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
              "token files are read in place: "
              "a little-endian host is required");
#endif

constexpr int32_t kLlmcMagic = 20240520;
constexpr int64_t kLlmcHeaderBytes = 256 * 4;
constexpr char kMegatronMagic[9] = {'M', 'M', 'I', 'D', 'I', 'D', 'X', '\0', '\0'};
constexpr int64_t kMegatronHeaderBytes = 9 + 8 + 1 + 8 + 8;

bool is_file(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

/// Reads a little-endian value at byte `offset` (unaligned-safe).
template <typename T>
T load(const std::byte* base, int64_t offset) {
  T value;
  std::memcpy(&value, base + offset, sizeof(T));
  return value;
}

[[noreturn]] void missing(const std::string& path) {
  throw DataError("data file " + path +
                  " not found; give an existing token file (llm.c shard, Megatron .bin/.idx "
                  "prefix, raw uint16)");
}

/// Calls fn(const T*) with the tokens typed by dtype.
template <typename Fn>
void with_typed(TokenDtype dtype, const std::byte* p, Fn&& fn) {
  switch (dtype) {
    case TokenDtype::kUint8:
      return fn(reinterpret_cast<const uint8_t*>(p));
    case TokenDtype::kInt8:
      return fn(reinterpret_cast<const int8_t*>(p));
    case TokenDtype::kInt16:
      return fn(reinterpret_cast<const int16_t*>(p));
    case TokenDtype::kInt32:
      return fn(reinterpret_cast<const int32_t*>(p));
    case TokenDtype::kInt64:
      return fn(reinterpret_cast<const int64_t*>(p));
    case TokenDtype::kUint16:
      return fn(reinterpret_cast<const uint16_t*>(p));
  }
}

}  // namespace

std::string format_count(int64_t n) {
  const std::string digits = std::to_string(n < 0 ? -n : n);
  std::string out;
  for (size_t i = 0; i < digits.size(); ++i) {
    if (i > 0 && (digits.size() - i) % 3 == 0) out += ',';
    out += digits[i];
  }
  return n < 0 ? "-" + out : out;
}

const char* format_name(TokenFormat format) {
  switch (format) {
    case TokenFormat::kLlmc:
      return "llm.c shard";
    case TokenFormat::kMegatron:
      return "Megatron dataset";
    case TokenFormat::kRawUint16:
      return "raw uint16 tokens";
  }
  return "?";
}

const char* dtype_name(TokenDtype dtype) {
  switch (dtype) {
    case TokenDtype::kUint8:
      return "uint8";
    case TokenDtype::kInt8:
      return "int8";
    case TokenDtype::kInt16:
      return "int16";
    case TokenDtype::kInt32:
      return "int32";
    case TokenDtype::kInt64:
      return "int64";
    case TokenDtype::kUint16:
      return "uint16";
  }
  return "?";
}

int64_t dtype_bytes(TokenDtype dtype) {
  switch (dtype) {
    case TokenDtype::kUint8:
    case TokenDtype::kInt8:
      return 1;
    case TokenDtype::kInt16:
    case TokenDtype::kUint16:
      return 2;
    case TokenDtype::kInt32:
      return 4;
    case TokenDtype::kInt64:
      return 8;
  }
  return 0;
}

DetectedFormat detect_format(const std::string& path) {
  // Megatron: the user may name the prefix X, X.bin or X.idx.
  std::string prefix;
  if (ends_with(path, ".idx")) {
    prefix = path.substr(0, path.size() - 4);
  } else if (ends_with(path, ".bin") && is_file(path.substr(0, path.size() - 4) + ".idx")) {
    prefix = path.substr(0, path.size() - 4);
  } else if (!is_file(path) && is_file(path + ".idx")) {
    prefix = path;
  }
  if (!prefix.empty()) {
    if (!is_file(prefix + ".idx")) missing(prefix + ".idx");
    if (!is_file(prefix + ".bin")) {
      throw DataError("data file " + prefix + ".bin not found (its index " + prefix +
                      ".idx exists); a Megatron dataset needs both files side by side");
    }
    return {TokenFormat::kMegatron, prefix + ".bin", prefix + ".idx"};
  }
  if (!is_file(path)) missing(path);
  MappedFile file(path);
  if (file.size() >= 4 && load<int32_t>(file.data(), 0) == kLlmcMagic) {
    return {TokenFormat::kLlmc, path, ""};
  }
  if (file.size() % 2 != 0) {
    throw DataError("data file " + path + ": unknown format (" + format_count(file.size()) +
                    " bytes, an odd size, and no llm.c header or Megatron .idx beside it); "
                    "convert it to uint16 tokens with `trident prepare-data`");
  }
  return {TokenFormat::kRawUint16, path, ""};
}

TokenFile TokenFile::open(const std::string& path) {
  const DetectedFormat detected = detect_format(path);
  TokenFile file(path, MappedFile(detected.data_path));
  file.format_ = detected.format;
  switch (detected.format) {
    case TokenFormat::kLlmc:
      file.open_llmc();
      break;
    case TokenFormat::kMegatron:
      file.open_megatron(detected.index_path);
      break;
    case TokenFormat::kRawUint16:
      file.open_raw();
      break;
  }
  return file;
}

void TokenFile::open_llmc() {
  const int64_t bytes = static_cast<int64_t>(data_.size());
  if (bytes < kLlmcHeaderBytes) {
    throw DataError("data file " + path_ + ": llm.c shard shorter than its 1024-byte header (" +
                    format_count(bytes) + " bytes); the shard is truncated, re-export it");
  }
  const int32_t version = load<int32_t>(data_.data(), 4);
  if (version != 1) {
    throw DataError("data file " + path_ + ": llm.c shard version " + std::to_string(version) +
                    " is not supported (expected 1, uint16 tokens); re-export it as version 1");
  }
  const int64_t count = load<int32_t>(data_.data(), 8);
  if (count < 0 || kLlmcHeaderBytes + 2 * count != bytes) {
    throw DataError("data file " + path_ + ": llm.c header says " + format_count(count) +
                    " tokens (" + format_count(kLlmcHeaderBytes + 2 * count) +
                    " bytes) but the file has " + format_count(bytes) +
                    " bytes; the shard is truncated or corrupt, re-export it");
  }
  dtype_ = TokenDtype::kUint16;
  tokens_ = data_.data() + kLlmcHeaderBytes;
  count_ = count;
}

void TokenFile::open_raw() {
  dtype_ = TokenDtype::kUint16;
  tokens_ = data_.data();
  count_ = static_cast<int64_t>(data_.size() / 2);
}

void TokenFile::open_megatron(const std::string& index_path) {
  index_.emplace(index_path);
  const std::byte* idx = index_->data();
  const int64_t idx_bytes = static_cast<int64_t>(index_->size());
  const std::string rebuild = "; rebuild the pair with Megatron's preprocess_data.py";
  if (idx_bytes < kMegatronHeaderBytes || std::memcmp(idx, kMegatronMagic, 9) != 0) {
    throw DataError("data index " + index_path +
                    ": not a Megatron index (bad magic, expected MMIDIDX)" + rebuild);
  }
  const uint64_t version = load<uint64_t>(idx, 9);
  if (version != 1) {
    throw DataError("data index " + index_path + ": version " + std::to_string(version) +
                    " is not supported (expected 1)" + rebuild);
  }
  const uint8_t code = load<uint8_t>(idx, 17);
  static constexpr const char* kCodeNames[] = {"?",     "uint8",   "int8",    "int16", "int32",
                                               "int64", "float64", "float32", "uint16"};
  switch (code) {
    case 1:
      dtype_ = TokenDtype::kUint8;
      break;
    case 2:
      dtype_ = TokenDtype::kInt8;
      break;
    case 3:
      dtype_ = TokenDtype::kInt16;
      break;
    case 4:
      dtype_ = TokenDtype::kInt32;
      break;
    case 5:
      dtype_ = TokenDtype::kInt64;
      break;
    case 8:
      dtype_ = TokenDtype::kUint16;
      break;
    default:
      throw DataError("data index " + index_path + ": dtype code " + std::to_string(code) + " (" +
                      (code <= 8 ? kCodeNames[code] : "unknown") +
                      ") is not supported; token ids must be integers (codes 1-5 or 8)" + rebuild);
  }
  const uint64_t sequences = load<uint64_t>(idx, 18);
  const uint64_t documents = load<uint64_t>(idx, 26);
  const uint64_t room = static_cast<uint64_t>(idx_bytes - kMegatronHeaderBytes);
  if (sequences > room / 12 || documents > room / 8 || 12 * sequences + 8 * documents != room) {
    throw DataError("data index " + index_path + " has " + format_count(idx_bytes) +
                    " bytes, which does not match its header (" + std::to_string(sequences) +
                    " sequences, " + std::to_string(documents) + " documents)" + rebuild);
  }
  // The .bin is read as the concatenation of all sequences, so the pointers must be
  // contiguous byte offsets.
  const int64_t item = dtype_bytes(dtype_);
  const int64_t sizes_at = kMegatronHeaderBytes;
  const int64_t pointers_at = sizes_at + 4 * static_cast<int64_t>(sequences);
  int64_t total = 0;
  for (uint64_t k = 0; k < sequences; ++k) {
    const int32_t size = load<int32_t>(idx, sizes_at + 4 * static_cast<int64_t>(k));
    const int64_t pointer = load<int64_t>(idx, pointers_at + 8 * static_cast<int64_t>(k));
    if (size < 0 || pointer != total * item) {
      throw DataError("data index " + index_path + ": sequence " + std::to_string(k) +
                      " has size " + std::to_string(size) + " at byte " + std::to_string(pointer) +
                      ", expected contiguous sequences (byte " + std::to_string(total * item) +
                      ")" + rebuild);
    }
    total += size;
  }
  const int64_t bin_bytes = static_cast<int64_t>(data_.size());
  if (total * item != bin_bytes) {
    throw DataError("data file " + data_.path() + " has " + format_count(bin_bytes) +
                    " bytes but " + index_path + " describes " + format_count(total * item) + " (" +
                    format_count(total) + " tokens of " + dtype_name(dtype_) +
                    "); the pair does not match" + rebuild);
  }
  tokens_ = data_.data();
  count_ = total;
  documents_ = static_cast<int64_t>(documents);
}

void TokenFile::read(int64_t offset, int64_t length, int32_t* out) const {
  if (offset < 0 || length < 0 || offset + length > count_) {
    throw DataError("data file " + path_ + ": read of tokens [" + std::to_string(offset) + ", " +
                    std::to_string(offset + length) + ") is outside its " + std::to_string(count_) +
                    " tokens");
  }
  with_typed(dtype_, tokens_, [&](const auto* tokens) {
    for (int64_t k = 0; k < length; ++k) out[k] = static_cast<int32_t>(tokens[offset + k]);
  });
}

TokenRange TokenFile::scan() const {
  TokenRange range;
  if (count_ == 0) return range;
  with_typed(dtype_, tokens_, [&](const auto* tokens) {
    using T = std::remove_cv_t<std::remove_pointer_t<decltype(tokens)>>;
    T lo = std::numeric_limits<T>::max(), hi = std::numeric_limits<T>::lowest();
    for (int64_t k = 0; k < count_; ++k) {  // one branch-light pass over the mapping
      lo = tokens[k] < lo ? tokens[k] : lo;
      hi = tokens[k] > hi ? tokens[k] : hi;
    }
    range.min_token = static_cast<int64_t>(lo);
    range.max_token = static_cast<int64_t>(hi);
    range.min_position = range.max_position = -1;
    for (int64_t k = 0; k < count_ && (range.min_position < 0 || range.max_position < 0); ++k) {
      if (range.min_position < 0 && tokens[k] == lo) range.min_position = k;
      if (range.max_position < 0 && tokens[k] == hi) range.max_position = k;
    }
  });
  return range;
}

void TokenFile::check_vocab(int64_t vocab) const {
  const TokenRange range = scan();
  if (count_ > 0 && range.min_token < 0) {
    throw DataError("data file " + path_ + ": token " + std::to_string(range.min_token) +
                    " at position " + std::to_string(range.min_position) +
                    " is negative; token ids must lie in [0, model.vocab), re-tokenize the data");
  }
  if (count_ > 0 && range.max_token >= vocab) {
    // Report the first offending position, and the vocabulary that fits every token.
    int64_t first = range.max_position, token = range.max_token;
    with_typed(dtype_, tokens_, [&](const auto* tokens) {
      for (int64_t k = 0; k < range.max_position; ++k) {
        if (static_cast<int64_t>(tokens[k]) >= vocab) {
          first = k;
          token = static_cast<int64_t>(tokens[k]);
          break;
        }
      }
    });
    const std::string fix = std::to_string(range.max_token + 1);
    throw DataError("data file " + path_ + ": token " + std::to_string(token) + " at position " +
                    std::to_string(first) + " is \u2265 model.vocab = " + std::to_string(vocab) +
                    "; set model.vocab to at least " + fix);
  }
}

}  // namespace trident::data
