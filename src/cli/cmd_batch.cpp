// `trident batch CONFIG --step N`: where each sequence of step N's global batch comes from
// (source, epoch, window, file offset) and its tokens, exactly as training reads them.
#include <cstdio>    // std::snprintf
#include <iostream>  // std::cout
#include <memory>    // std::unique_ptr
#include <nlohmann/json.hpp>
#include <vector>  // std::vector

#include "cli/args.h"
#include "cli/commands.h"
#include "config/config.h"        // load_config
#include "config/data_windows.h"  // parse_data_windows, data_batch_of_step
#include "data/data_config.h"     // source_options
#include "data/token_source.h"    // open_source, SequenceOrigin
#include "data/tokenizer.h"       // make_tokenizer

namespace trident::cli {
namespace {

using nlohmann::json;

/// A string as JSON writes it, bytes that are not UTF-8 replaced: a readable quote of text.
std::string quoted(const std::string& text) {
  return json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

}  // namespace

int cmd_batch(const Args& args) {
  // One process: the layout's keys are read but play no part (world 0 checks no world).
  const TrainConfig config = load_config(args.positional[0], args.sets, 0);
  const long long step = args.get_int("step", 0);
  if (step < 1) throw UsageError("--step expects a training step from 1, got " + args.get("step"));
  const long long shown = args.get_int("tokens", 16);
  if (shown < 0) throw UsageError("--tokens expects a count >= 0, got " + args.get("tokens"));
  const int64_t G = config.train.global_batch_size, row = config.model.seq_len + 1;
  int64_t first = 0, last = G;
  if (args.has("sequence")) {
    first = args.get_int("sequence", 0);
    if (first < 0 || first >= G)
      throw UsageError("--sequence expects an index in [0, " + std::to_string(G) +
                       ") (train.global_batch_size = " + std::to_string(G) + "), got " +
                       args.get("sequence"));
    last = first + 1;
  }
  std::unique_ptr<data::Tokenizer> tokenizer;
  if (args.has("tokenizer"))
    tokenizer =
        data::make_tokenizer({args.get("tokenizer"), args.get("vocab"), args.get("merges")});

  const int64_t batch = data_batch_of_step(parse_data_windows(config.data.skip), step);
  const std::unique_ptr<data::TokenSource> source = data::open_source(data::source_options(config));
  const bool as_json = args.has("json");
  json sequences = json::array();
  if (!as_json)
    std::cout << "# " << config.source << ": step " << step << " trains on data batch " << batch
              << ", " << G << " sequences of " << row << " tokens\n# data: " << source->describe()
              << "\n";
  std::vector<int32_t> tokens(static_cast<size_t>(row));
  for (int64_t i = first; i < last; ++i) {
    const data::SequenceOrigin o = source->origin(batch - 1, i);
    source->sequence(batch - 1, i, row, tokens.data());
    if (as_json) {
      json entry = {{"index", i},         {"source", o.name},
                    {"epoch", o.epoch},   {"epoch_fraction", o.epoch_fraction},
                    {"window", o.window}, {"offset", o.offset},
                    {"tokens", tokens}};
      if (tokenizer) entry["text"] = json(tokenizer->decode(tokens));
      sequences.push_back(std::move(entry));
      continue;
    }
    char epoch[64];
    std::snprintf(epoch, sizeof(epoch), "epoch %lld (%.4f)", static_cast<long long>(o.epoch),
                  o.epoch_fraction);
    std::cout << "sequence " << i << ": source " << o.name << ", " << epoch << ", window "
              << o.window << ", offset " << o.offset << "\n  tokens:";
    const std::vector<int32_t> head(tokens.begin(), tokens.begin() + std::min<int64_t>(shown, row));
    for (const int32_t t : head) std::cout << " " << t;
    std::cout << "\n";
    if (tokenizer) std::cout << "  text: " << quoted(tokenizer->decode(head)) << "\n";
  }
  if (as_json)
    std::cout << json{{"step", step}, {"batch", batch}, {"sequences", sequences}}.dump(
                     -1, ' ', false, json::error_handler_t::replace)
              << "\n";
  return 0;
}

}  // namespace trident::cli
