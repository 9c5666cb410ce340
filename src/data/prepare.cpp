// prepare_token_file: checks everything first, then streams each input through the
// tokenizer in buffers, carrying the unfinished end of one buffer into the next.
#include "data/prepare.h"

#include <sys/stat.h>  // stat

#include <algorithm>  // std::max_element
#include <cerrno>     // errno
#include <chrono>     // std::chrono::steady_clock
#include <cstring>    // std::strerror
#include <memory>     // std::unique_ptr

#include "data/data_error.h"        // DataError
#include "data/prepare_progress.h"  // Progress
#include "data/prepare_writer.h"    // LlmcWriter
#include "data/token_file.h"        // format_count

namespace trident::data {
namespace {

using FilePtr = std::unique_ptr<std::FILE, int (*)(std::FILE*)>;

struct InputFile {
  std::string path;
  int64_t bytes = 0;  // 0 when not a regular file (a pipe): the total is then unknown
};

/// Every input exists and is not a directory, and the output is none of them.
std::vector<InputFile> check_inputs(const PrepareOptions& options) {
  if (options.inputs.empty()) throw DataError("no input files; pass text files to --in");
  struct stat out {};
  const bool out_exists = ::stat(options.output.c_str(), &out) == 0;
  std::vector<InputFile> files;
  for (const std::string& path : options.inputs) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0)
      throw DataError("input file " + path + " not found; pass existing text files to --in");
    if (S_ISDIR(st.st_mode))
      throw DataError("input file " + path + " is a directory; pass the text files in it to --in");
    if (out_exists && st.st_dev == out.st_dev && st.st_ino == out.st_ino)
      throw DataError("--out " + options.output +
                      " is also an input; write the tokens to "
                      "another file");
    files.push_back({path, S_ISREG(st.st_mode) ? static_cast<int64_t>(st.st_size) : 0});
  }
  return files;
}

/// The tokenizer's ids fit uint16, and it has an end-of-text token if one is asked for.
void check_tokenizer(const Tokenizer& tokenizer, const PrepareOptions& options) {
  if (tokenizer.vocab_size() - 1 > kMaxLlmcToken)
    throw DataError("tokenizer " + tokenizer.describe() + " has token ids up to " +
                    format_count(tokenizer.vocab_size() - 1) +
                    ", but llm.c token files hold uint16 ids (at most " +
                    format_count(kMaxLlmcToken) +
                    "); use a vocabulary whose ids are all below 65,536");
  if (options.append_eot && !tokenizer.end_of_text())
    throw DataError("--append-eot: tokenizer " + tokenizer.describe() +
                    " has no end-of-text token (\"<|endoftext|>\" in vocab.json); add it to "
                    "the vocabulary or drop --append-eot");
  if (options.buffer_bytes == 0) throw DataError("the read buffer must hold at least 1 byte");
}

/// Streams files through the tokenizer into the writer, counting bytes and tokens.
class FileEncoder {
 public:
  FileEncoder(const Tokenizer& tokenizer, LlmcWriter& writer, Progress& progress,
              PrepareStats& stats)
      : tokenizer_(tokenizer), writer_(writer), progress_(progress), stats_(stats) {}

  /// Tokenises one file, `buffer_bytes` at a time.
  void encode(const InputFile& input, size_t buffer_bytes) {
    FilePtr file(std::fopen(input.path.c_str(), "rb"), &std::fclose);
    if (!file)
      throw DataError("cannot read input file " + input.path + ": " + std::strerror(errno));
    // The window holds the words carried over from the last buffer, then the new one.
    std::string window;
    for (bool at_end = false; !at_end;) {
      const size_t carried = window.size();
      window.resize(carried + buffer_bytes);
      const size_t got = std::fread(&window[carried], 1, buffer_bytes, file.get());
      window.resize(carried + got);
      if (std::ferror(file.get()))
        throw DataError("cannot read input file " + input.path + ": " + std::strerror(errno));
      at_end = got < buffer_bytes;  // fread stops short only at the end of the file
      stats_.bytes += static_cast<int64_t>(got);
      tokens_.clear();
      window.erase(0, tokenizer_.encode_prefix(window, at_end, tokens_));
      write(tokens_);
    }
  }

  /// Appends tokens to the file and the counts.
  void write(const std::vector<int32_t>& tokens) {
    if (tokens.empty()) return;
    writer_.append(tokens);
    stats_.tokens += static_cast<int64_t>(tokens.size());
    stats_.max_token =
        std::max<int64_t>(stats_.max_token, *std::max_element(tokens.begin(), tokens.end()));
    progress_.update(stats_.bytes, stats_.tokens);
  }

 private:
  const Tokenizer& tokenizer_;
  LlmcWriter& writer_;
  Progress& progress_;
  PrepareStats& stats_;
  std::vector<int32_t> tokens_;
};

}  // namespace

PrepareStats prepare_token_file(const Tokenizer& tokenizer, const PrepareOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  const std::vector<InputFile> inputs = check_inputs(options);
  check_tokenizer(tokenizer, options);
  int64_t total = 0;
  for (const InputFile& input : inputs) total += input.bytes;

  PrepareStats stats;
  Progress progress(options.progress, total, options.progress_interval_s);
  LlmcWriter writer(options.output);
  FileEncoder encoder(tokenizer, writer, progress, stats);
  for (const InputFile& input : inputs) {
    encoder.encode(input, options.buffer_bytes);
    if (options.append_eot) encoder.write({*tokenizer.end_of_text()});
    ++stats.files;
  }
  progress.finish(stats.bytes, stats.tokens);
  writer.commit();
  stats.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return stats;
}

}  // namespace trident::data
