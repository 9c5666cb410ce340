// `trident prepare-data --in FILE... --out OUT --tokenizer byte|gpt2`: tokenises text
// files into one llm.c token file that data.source reads (the work is in data/prepare.h).
#include <cstdio>    // std::fprintf, stderr
#include <iostream>  // std::cout
#include <string>    // std::string
#include <vector>    // std::vector

#include "cli/args.h"         // CommandSpec, parse_args, help_text, UsageError
#include "cli/commands.h"     // Argv, cmd_prepare_data
#include "data/data_error.h"  // DataError
#include "data/prepare.h"     // prepare_token_file, PrepareOptions
#include "data/token_file.h"  // format_count
#include "data/tokenizer.h"   // make_tokenizer

namespace trident::cli {

namespace {

const CommandSpec kSpec{
    "prepare-data",
    "trident prepare-data --in FILE... --out OUT.bin --tokenizer byte|gpt2 "
    "[--vocab vocab.json --merges merges.txt] [--append-eot]",
    "Tokenises the text files FILE... (in this order) into one llm.c token file OUT.bin (a\n"
    "1024-byte header, then uint16 tokens): the format data.source reads. --tokenizer byte\n"
    "makes one token per byte (train with model.vocab = 256); --tokenizer gpt2 applies\n"
    "GPT-2's byte-level BPE from the vocab.json and merges.txt of a Hugging Face download\n"
    "of gpt2 (model.vocab = 50257). Files are read in buffers, so they may be larger than\n"
    "memory, with a progress line on stderr. OUT.bin is written as OUT.bin.tmp and renamed\n"
    "when complete; on an error it is left as it was. See docs/real-data.md.",
    {{"in", "FILE...", "text files to tokenise (several after one --in, or --in repeated)"},
     {"out", "OUT.bin", "the llm.c token file to write"},
     {"tokenizer", "byte|gpt2", "byte: one token per byte; gpt2: GPT-2's byte-level BPE"},
     {"vocab", "vocab.json", "gpt2: the tokenizer's vocab.json (token -> id)"},
     {"merges", "merges.txt", "gpt2: the tokenizer's merges.txt (merges in rank order)"},
     {"append-eot", "", "end each file with end-of-text (gpt2: <|endoftext|>; byte: 0)"},
     {"buffer-kib", "N", "read N KiB at a time (default 1024)"}},
    0,
    0};

/// Takes every `--in FILE...` group out of argv (the files run up to the next option),
/// so that both `--in a b` and `--in a --in b` work; parse_args sees the rest.
Argv take_inputs(const Argv& argv, std::vector<std::string>& inputs) {
  Argv rest;
  for (size_t i = 0; i < argv.size(); ++i) {
    if (argv[i].rfind("--in=", 0) == 0) {
      inputs.push_back(argv[i].substr(5));
    } else if (argv[i] == "--in") {
      const size_t before = inputs.size();
      while (i + 1 < argv.size() && argv[i + 1].rfind("--", 0) != 0 && argv[i + 1] != "-h")
        inputs.push_back(argv[++i]);
      if (inputs.size() == before) throw UsageError("--in needs at least one FILE");
    } else {
      rest.push_back(argv[i]);
    }
  }
  return rest;
}

std::string required(const Args& args, const std::string& name, const std::string& what) {
  if (!args.has(name) || args.get(name).empty())
    throw UsageError("--" + name + " is required (" + what + ")\nusage: " + kSpec.usage);
  return args.get(name);
}

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

int cmd_prepare_data(const Argv& argv) {
  std::vector<std::string> inputs;
  const Args args = parse_args(kSpec, take_inputs(argv, inputs));
  if (args.help) {
    std::cout << help_text(kSpec);
    return 0;
  }
  if (!args.sets.empty())
    throw UsageError("prepare-data reads no config, so --set has nothing to set");
  if (inputs.empty())
    throw UsageError("--in is required (the text files to tokenise)\nusage: " + kSpec.usage);
  data::PrepareOptions options;
  options.inputs = inputs;
  options.output = required(args, "out", "the token file to write");
  options.append_eot = args.has("append-eot");
  const long long buffer_kib = args.get_int("buffer-kib", 1024);
  if (buffer_kib < 1) throw UsageError("--buffer-kib must be at least 1");
  options.buffer_bytes = static_cast<size_t>(buffer_kib) * 1024;
  options.progress = stderr;
  const data::TokenizerOptions tokenizer_options{required(args, "tokenizer", "byte or gpt2"),
                                                 args.get("vocab"), args.get("merges")};
  try {
    const auto tokenizer = data::make_tokenizer(tokenizer_options);
    const data::PrepareStats stats = data::prepare_token_file(*tokenizer, options);
    print_summary(*tokenizer, options, stats);
  } catch (const data::DataError& e) {
    // Bad input, not a failure of the program: exit code 2, as for a bad config.
    std::fprintf(stderr, "trident prepare-data: error: %s\n", e.what());
    return 2;
  }
  return 0;
}

}  // namespace trident::cli
