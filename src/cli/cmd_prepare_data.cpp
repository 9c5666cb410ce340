// `trident prepare-data --in FILE... --out OUT --tokenizer byte|gpt2`: tokenises text
// files into one llm.c token file that data.source reads (the work is in data/prepare.h).
#include <cstdio>    // std::fprintf, stderr
#include <iostream>  // std::cout
#include <string>    // std::string
#include <vector>    // std::vector

#include "cli/args.h"         // Args, UsageError
#include "cli/commands.h"     // cmd_prepare_data
#include "data/prepare.h"     // prepare_token_file, PrepareOptions
#include "data/token_file.h"  // format_count
#include "data/tokenizer.h"   // make_tokenizer

namespace trident::cli {

namespace {

void print_summary(const data::Tokenizer& tokenizer, const data::PrepareOptions& options,
                   const data::PrepareStats& stats) {
  char rate[64];
  std::snprintf(rate, sizeof(rate), "%.1f s (%.1f MB/s)", stats.seconds,
                stats.bytes / 1e6 / (stats.seconds > 0 ? stats.seconds : 1e-9));
  std::cout << "wrote " << options.output << ": " << data::format_count(stats.tokens)
            << " tokens (llm.c shard, uint16) from " << stats.files
            << (stats.files == 1 ? " file, " : " files, ") << data::format_count(stats.bytes)
            << " bytes of text, in " << rate << "\n"
            << "tokenizer: " << tokenizer.describe()
            << "; largest token id used: " << stats.max_token << "\n"
            << "train on it with data.source = \"" << options.output
            << "\" and model.vocab >= " << tokenizer.vocab_size() << "\n";
}

}  // namespace

int cmd_prepare_data(const Args& args) {
  data::PrepareOptions options;
  options.inputs = args.lists.at("in");
  options.output = args.get("out");
  options.append_eot = args.has("append-eot");
  const long long buffer_kib = args.get_int("buffer-kib", 1024);
  if (buffer_kib < 1) throw UsageError("--buffer-kib must be at least 1");
  options.buffer_bytes = static_cast<size_t>(buffer_kib) * 1024;
  options.progress = stderr;
  const data::TokenizerOptions tokenizer_options{args.get("tokenizer"), args.get("vocab"),
                                                 args.get("merges")};
  const auto tokenizer = data::make_tokenizer(tokenizer_options);
  const data::PrepareStats stats = data::prepare_token_file(*tokenizer, options);
  print_summary(*tokenizer, options, stats);
  return 0;
}

}  // namespace trident::cli
