// `trident generate --checkpoint CKPT (--prompt TEXT | --prompt-tokens 1,2,3)`: continues a
// prompt with a checkpoint's model (trident or Hugging Face files), greedy or sampled, over
// a KV cache, at tp 1 or across a tp group; prints the text, or JSON with the tokens.

#include <chrono>    // std::chrono::steady_clock
#include <cmath>     // std::isfinite
#include <cstdio>    // std::fprintf
#include <iostream>  // std::cout
#include <memory>
#include <nlohmann/json.hpp>  // nlohmann::json
#include <sstream>            // std::istringstream

#include "checkpoint/checkpoint.h"  // checkpoint_config, load_model_weights
#include "cli/args.h"
#include "cli/commands.h"
#include "config/config.h"
#include "data/tokenizer.h"             // make_tokenizer
#include "models/model_config.h"        // make_model_stage, run_device
#include "models/model_stage.h"         // ModelStage
#include "parallel/agreement.h"         // run_agreed
#include "parallel/parallel_context.h"  // ParallelContext
#include "parallel/world.h"             // world_communicator, local_rank
#include "train/generate.h"             // generate

namespace trident::cli {

namespace {

/// A number >= `lo` (and <= `hi`): "--temperature expects a number >= 0, got 'x'".
double get_number(const Args& args, const std::string& name, double fallback, double lo,
                  double hi) {
  if (!args.has(name)) return fallback;
  const std::string text = args.get(name);
  size_t used = 0;
  double value = 0.0;
  try {
    value = std::stod(text, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (text.empty() || used != text.size() || !std::isfinite(value) || value < lo || value > hi) {
    std::ostringstream range;
    range << "a number in [" << lo << ", " << hi << "]";
    throw UsageError("--" + name + " expects " + range.str() + ", got '" + text + "'");
  }
  return value;
}

/// "1,2,3" -> {1, 2, 3}, each in [0, vocab).
std::vector<int64_t> parse_token_list(const std::string& text, int64_t vocab) {
  std::vector<int64_t> ids;
  std::istringstream in(text);
  std::string word;
  while (std::getline(in, word, ',')) {
    size_t used = 0;
    long long id = -1;
    try {
      id = std::stoll(word, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (word.empty() || used != word.size() || id < 0 || id >= vocab)
      throw UsageError("--prompt-tokens expects token ids in [0, " + std::to_string(vocab) +
                       ") separated by commas, got '" + word + "' in '" + text + "'");
    ids.push_back(id);
  }
  if (ids.empty()) throw UsageError("--prompt-tokens is empty; give at least one token id");
  return ids;
}

/// The layout keys generation cannot use: the model must be whole on every tp group.
void check_generate_layout(const TrainConfig& c) {
  const auto& p = c.parallel;
  auto refuse = [](const std::string& what) {
    throw UsageError("generate runs the whole model on each tp group: " + what);
  };
  if (p.pp != 1) refuse("parallel.pp = " + std::to_string(p.pp) + "; leave it at 1");
  if (p.cp != 1) refuse("parallel.cp = " + std::to_string(p.cp) + "; leave it at 1");
  if (p.ep != 1) refuse("parallel.ep = " + std::to_string(p.ep) + "; leave it at 1");
  if (p.virtual_stages != 1) refuse("parallel.virtual_stages must be 1");
  if (p.sequence_parallel) refuse("parallel.sequence_parallel = true; leave it false");
  if (c.model.moe_experts > 0 && c.model.moe_capacity_factor > 0)
    throw UsageError(
        "generate needs a dropless Mixture-of-Experts model: model.moe_capacity_factor = " +
        std::to_string(c.model.moe_capacity_factor) +
        " drops tokens per sequence, which a token-by-token decode cannot repeat; "
        "--set model.moe_capacity_factor=0");
}

}  // namespace

int cmd_generate(const Args& args) {
  if (args.has("prompt") == args.has("prompt-tokens"))
    throw UsageError(
        "give the prompt as text (--prompt TEXT) or as token ids (--prompt-tokens "
        "1,2,3), one of the two");
  GenerateOptions options;
  options.tokens = args.get_int("tokens", 32);
  if (options.tokens < 1) throw UsageError("--tokens must be at least 1");
  options.sampling.temperature = get_number(args, "temperature", 0.0, 0.0, 1e6);
  options.sampling.top_k = args.get_int("top-k", 0);
  if (options.sampling.top_k < 0) throw UsageError("--top-k must be >= 0 (0 keeps every token)");
  options.sampling.top_p = get_number(args, "top-p", 1.0, 0.0, 1.0);
  if (!(options.sampling.top_p > 0.0)) throw UsageError("--top-p must be in (0, 1]");
  const long long seed = args.get_int("seed", 0);
  if (seed < 0) throw UsageError("--seed must be >= 0");
  options.sampling.seed = static_cast<uint64_t>(seed);
  options.kv_cache = !args.has("no-kv-cache");

  const std::unique_ptr<Communicator> job = world_communicator();
  const int world = job->size(), rank = job->rank();
  // The saving run's layout does not apply (SavedParallel::kNone): one rank per tp group
  // unless --set says so.
  std::vector<std::string> sets = {"train.micro_batch_size=1",
                                   "train.global_batch_size=" + std::to_string(world)};
  sets.insert(sets.end(), args.sets.begin(), args.sets.end());
  const std::string path = args.get("checkpoint");
  TrainConfig config;
  std::unique_ptr<data::Tokenizer> tokenizer;
  std::vector<int64_t> prompt;
  run_agreed(*job, [&] {
    config = checkpoint_config(path, "", sets, world, SavedParallel::kNone);
    check_device(config.train.device);
    check_generate_layout(config);
    tokenizer = data::make_tokenizer(
        {args.get("tokenizer", "byte"), args.get("vocab"), args.get("merges")});
    if (config.model.vocab > tokenizer->vocab_size())
      throw UsageError("the model's vocabulary (" + std::to_string(config.model.vocab) +
                       " tokens) is larger than the tokenizer's, " + tokenizer->describe() +
                       "; give the model's tokenizer (--tokenizer gpt2 --vocab vocab.json "
                       "--merges merges.txt)");
    if (args.has("prompt")) {
      for (int32_t id : tokenizer->encode(args.get("prompt"))) prompt.push_back(id);
      if (prompt.empty()) throw UsageError("--prompt is empty; give at least one character");
      for (int64_t id : prompt)
        if (id >= config.model.vocab)
          throw UsageError("--prompt encodes to token " + std::to_string(id) +
                           ", outside the model's vocabulary of " +
                           std::to_string(config.model.vocab));
    } else {
      prompt = parse_token_list(args.get("prompt-tokens"), config.model.vocab);
    }
    const int64_t length = static_cast<int64_t>(prompt.size()) + options.tokens;
    if (length > config.model.seq_len)
      throw UsageError("the prompt's " + std::to_string(prompt.size()) + " tokens and --tokens " +
                       std::to_string(options.tokens) + " make " + std::to_string(length) +
                       " positions, more than the model's " + std::to_string(config.model.seq_len) +
                       " (model.seq_len); ask for fewer");
  });

  const auto& p = config.parallel;
  ParallelContext ctx(*job, static_cast<int>(p.dp), 1, static_cast<int>(p.tp), p.timeout_s,
                      run_device(config.train.device, local_rank()));
  std::unique_ptr<ModelStage> model;
  run_agreed(*job, [&] {
    model = make_model_stage(config, ctx.tp(), 0, 1, ctx.device(), false, &ctx.ep());
  });
  load_model_weights(*model, ctx, config, path, "");
  const auto start = std::chrono::steady_clock::now();
  Generation out;
  run_agreed(*job, [&] { out = generate(*model, ctx.tp(), prompt, options); });
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (rank != 0) return 0;
  std::vector<int32_t> ids(out.tokens.begin(), out.tokens.end());
  const std::string text = tokenizer->decode(ids);
  if (args.has("json")) {
    const nlohmann::json j = {{"tokens", out.tokens}, {"text", text}, {"prompt_tokens", prompt}};
    // Bytes that are not UTF-8 (a byte model's output) are printed as U+FFFD.
    std::cout << j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) << "\n";
  } else {
    std::vector<int32_t> prompt_ids(prompt.begin(), prompt.end());
    std::cout << tokenizer->decode(prompt_ids) << text << "\n";
  }
  std::fprintf(stderr, "generated %lld tokens in %.3f s (%.1f tokens/s, %s)\n",
               static_cast<long long>(out.tokens.size()), seconds,
               static_cast<double>(out.tokens.size()) / seconds,
               options.kv_cache ? "KV cache" : "no KV cache: the whole sequence at every token");
  return 0;
}

}  // namespace trident::cli
