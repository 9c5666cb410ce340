// The llm.c writer: blank header, uint16 tokens, header with the count, fsync, rename.
#include "data/prepare_writer.h"

#include <unistd.h>  // fsync

#include <cerrno>   // errno
#include <cstring>  // std::strerror
#include <limits>   // std::numeric_limits
#include <utility>  // std::move

#include "data/data_error.h"  // DataError
#include "data/token_file.h"  // format_count

namespace trident::data {
namespace {

constexpr int32_t kLlmcMagic = 20240520;
constexpr int32_t kLlmcVersion = 1;
constexpr int kHeaderInts = 256;

}  // namespace

LlmcWriter::LlmcWriter(std::string path) : path_(std::move(path)), tmp_path_(path_ + ".tmp") {
  file_ = std::fopen(tmp_path_.c_str(), "wb");
  if (!file_)
    throw DataError("cannot create " + tmp_path_ + ": " + std::strerror(errno) +
                    "; choose an --out in an existing, writable directory");
  const int32_t blank[kHeaderInts] = {};
  write(blank, sizeof(blank));
}

LlmcWriter::~LlmcWriter() {
  if (file_) {
    std::fclose(file_);
    std::remove(tmp_path_.c_str());
  }
}

void LlmcWriter::write(const void* data, size_t bytes) {
  if (std::fwrite(data, 1, bytes, file_) != bytes)
    throw DataError("cannot write " + tmp_path_ + ": " + std::strerror(errno) +
                    "; free disk space or choose another --out");
}

void LlmcWriter::append(const std::vector<int32_t>& tokens) {
  // The header's count is an int32.
  if (count_ + static_cast<int64_t>(tokens.size()) > std::numeric_limits<int32_t>::max())
    throw DataError(path_ + ": more than " + format_count(std::numeric_limits<int32_t>::max()) +
                    " tokens do not fit one llm.c file (its header counts in int32); "
                    "split the inputs over several prepare-data runs");
  staging_.resize(tokens.size());
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (tokens[i] < 0 || tokens[i] > 65535)
      throw DataError(path_ + ": token id " + std::to_string(tokens[i]) +
                      " does not fit the uint16 tokens of an llm.c file");
    staging_[i] = static_cast<uint16_t>(tokens[i]);
  }
  write(staging_.data(), staging_.size() * sizeof(uint16_t));
  count_ += static_cast<int64_t>(tokens.size());
}

void LlmcWriter::commit() {
  int32_t header[kHeaderInts] = {kLlmcMagic, kLlmcVersion, static_cast<int32_t>(count_)};
  if (std::fseek(file_, 0, SEEK_SET) != 0)
    throw DataError("cannot seek in " + tmp_path_ + ": " + std::strerror(errno));
  write(header, sizeof(header));
  if (std::fflush(file_) != 0 || ::fsync(fileno(file_)) != 0)
    throw DataError("cannot write " + tmp_path_ + ": " + std::strerror(errno) +
                    "; free disk space or choose another --out");
  std::FILE* file = file_;
  file_ = nullptr;
  if (std::fclose(file) != 0 || std::rename(tmp_path_.c_str(), path_.c_str()) != 0) {
    const std::string reason = std::strerror(errno);
    std::remove(tmp_path_.c_str());
    throw DataError("cannot move " + tmp_path_ + " to " + path_ + ": " + reason);
  }
}

}  // namespace trident::data
