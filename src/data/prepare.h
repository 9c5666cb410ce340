// prepare-data's library side: text files → one llm.c token file, streamed in fixed-size
// buffers (a file larger than memory works) with a progress line.
#pragma once

#include <cstddef>  // size_t
#include <cstdint>  // int64_t
#include <cstdio>   // std::FILE
#include <string>   // std::string
#include <vector>   // std::vector

#include "data/tokenizer.h"  // Tokenizer

namespace trident::data {

/// What to tokenise and where to write it.
struct PrepareOptions {
  std::vector<std::string> inputs;        ///< text files, tokenised in this order into one file
  std::string output;                     ///< the llm.c file; written as output + ".tmp", renamed
  bool append_eot = false;                ///< the tokenizer's end-of-text token after each input
  size_t buffer_bytes = size_t{1} << 20;  ///< bytes read at a time; memory is about this
                                          ///< plus the longest word
  std::FILE* progress = nullptr;          ///< where the progress line goes; nullptr: nowhere
  double progress_interval_s = 0.5;       ///< the least time between two progress lines
};

/// What prepare_token_file did.
struct PrepareStats {
  int64_t files = 0;       ///< inputs read
  int64_t bytes = 0;       ///< bytes of text read
  int64_t tokens = 0;      ///< tokens written
  int64_t max_token = -1;  ///< the largest token id written (-1: none)
  double seconds = 0;      ///< wall time
};

/// The largest token id an llm.c file holds (its tokens are uint16).
constexpr int64_t kMaxLlmcToken = 65535;

/// Tokenises `options.inputs` with `tokenizer` into the llm.c file `options.output`
/// (256 int32 header: magic 20240520, version 1, token count; then uint16 tokens). The
/// tokens do not depend on buffer_bytes. Everything is checked before the output is
/// touched (inputs exist, ids fit uint16, an end-of-text token exists if asked for); on
/// any error the output is left as it was and the temporary file removed. Throws
/// DataError naming the file and the fix.
PrepareStats prepare_token_file(const Tokenizer& tokenizer, const PrepareOptions& options);

}  // namespace trident::data
