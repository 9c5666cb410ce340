// Hugging Face files, on 8 ranks: export of a dp2 x pp2 x tp2 checkpoint and its import at
// dp1 x pp2 x tp4 give identical weights (vocabulary padding removed and restored); and
// GPT-2 files written here by a writer of the test's own, from known tensors in HF's
// layout, import into a trainer and evaluate (`trident eval`'s code path, dp2 x pp2 x tp2)
// to the loss of a plain single-process forward of the same tensors, to a relative 1e-10.
#include <ATen/ATen.h>  // at::equal, at::matmul, at::layer_norm
#include <gtest/gtest.h>
#include <mpi.h>

#include <cmath>              // std::sqrt
#include <filesystem>         // std::filesystem
#include <fstream>            // std::ofstream
#include <map>                // std::map
#include <nlohmann/json.hpp>  // nlohmann::json

#include "checkpoint/checkpoint.h"   // checkpoint_config, load_model_weights
#include "checkpoint/hf.h"           // export_hf
#include "checkpoint/index.h"        // open_checkpoint
#include "checkpoint/reader.h"       // read_global_tensor
#include "checkpoint/safetensors.h"  // SafetensorsFile
#include "models/gpt.h"              // GptStage
#include "models/model_config.h"     // gpt_options
#include "mpi_cases.h"               // register_mpi_cases
#include "mpi_test_util.h"           // shared_temp_dir, remove_shared, relative_difference
#include "parallel/world.h"          // world_communicator
#include "parity_harness.h"          // parity_config_toml, train_steps
#include "train/checkpointing.h"     // save_checkpoint, load_checkpoint of a Trainer
#include "train/evaluate.h"          // evaluate_token_file

namespace trident::testing {
namespace {

using nlohmann::json;

// One job of 8 ranks for both (a start of 8 ranks costs about 4 s on two cores).
const bool kRegistered = register_mpi_cases({
    {"checkpoint_hf_export_import_to_dp1_pp2_tp4_and_independent_files_eval", 8,
     "CheckpointHf.export_*:CheckpointHf.independent_*"},
});

TEST(CheckpointHf, export_then_import_dp2_pp2_tp2_to_dp1_pp2_tp4_fp32_gives_identical_weights) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_hf_test_");
  // 61 tokens: padded to 62 rows at tp 2 and to 64 at tp 4.
  const std::vector<std::string> model = {"model.vocab=61", "train.precision=fp32"};
  auto config_for = [&](int dp, int pp, int tp, int zero) {
    std::vector<std::string> sets = model;
    for (const std::string& s :
         {"parallel.dp=" + std::to_string(dp), "parallel.pp=" + std::to_string(pp),
          "parallel.tp=" + std::to_string(tp), "parallel.zero_stage=" + std::to_string(zero),
          std::string("train.micro_batch_size=1")})
      sets.push_back(s);
    return parse_config(parity_config_toml(8, 3), "<hf test>", sets, 8);
  };
  std::string saved;
  {
    ParallelContext ctx(MPI_COMM_WORLD, 2, 2, 2, 120.0);
    Trainer trainer(config_for(2, 2, 2, 1), ctx);
    train_steps(trainer, 3);
    saved = save_checkpoint(trainer, ctx, dir + "/run", 0);
  }
  const checkpoint::CheckpointIndex source = checkpoint::open_checkpoint(saved, "");
  const int rank = world_rank();
  if (rank == 0) {
    checkpoint::export_hf(source, dir + "/hf");
    const checkpoint::SafetensorsFile file(dir + "/hf/model.safetensors");
    EXPECT_EQ(file.entries().size(), 4u + 12u * 4u);  // no lm_head: it is tied
    EXPECT_EQ(file.find("lm_head.weight"), nullptr);
    EXPECT_EQ(file.find("transformer.wte.weight")->shape, (std::vector<int64_t>{61, 32}));
    EXPECT_EQ(file.find("transformer.h.0.attn.c_attn.weight")->shape,
              (std::vector<int64_t>{32, 96}));
    EXPECT_TRUE(at::equal(file.view("transformer.h.0.attn.c_attn.weight"),
                          checkpoint::read_global_tensor(source, "h.0.attn.qkv.weight").t()));
    EXPECT_TRUE(at::equal(file.view("transformer.h.3.mlp.c_fc.weight"),
                          checkpoint::read_global_tensor(source, "h.3.mlp.fc.weight").t()));
    std::ifstream in(dir + "/hf/config.json");
    const json config = json::parse(in);
    EXPECT_EQ(config["model_type"], "gpt2");
    EXPECT_EQ(config["architectures"][0], "GPT2LMHeadModel");
    EXPECT_EQ(config["n_layer"], 4);
    EXPECT_EQ(config["n_embd"], 32);
    EXPECT_EQ(config["n_head"], 4);
    EXPECT_EQ(config["vocab_size"], 61);
    EXPECT_EQ(config["n_positions"], 16);
    EXPECT_EQ(config["activation_function"], "gelu_new");
    EXPECT_EQ(config["tie_word_embeddings"], true);
  }
  MPI_Barrier(MPI_COMM_WORLD);

  ParallelContext ctx(MPI_COMM_WORLD, 1, 2, 4, 120.0);
  Trainer imported(config_for(1, 2, 4, 0), ctx);
  load_checkpoint(imported, ctx, dir + "/hf", "");
  EXPECT_EQ(imported.completed_steps(), 0);
  for (const Parameter& p : imported.model().params().params()) {
    at::Tensor global = checkpoint::read_global_tensor(source, p.spec.name);
    if (p.spec.name == "wte.weight") {  // 62 stored rows, 64 here: the padding is zero
      at::Tensor padded = at::zeros(p.spec.global_shape, global.options());
      padded.narrow(0, 0, 61).copy_(global.narrow(0, 0, 61));
      global = padded;
    }
    EXPECT_TRUE(at::equal(p.tensor.detach(), cut_shard(p.spec, ctx.coord().tp, 4, global)))
        << "rank " << rank << ": " << p.spec.name << (p.spec.tied_copy ? " (tied copy)" : "");
  }
  const RunTrace more = train_steps(imported, 1);  // fine-tuning starts from the import
  EXPECT_TRUE(std::isfinite(more.losses[0]));
  remove_shared(MPI_COMM_WORLD, dir);
}

// --- GPT-2 files and a forward pass that share nothing with trident's code -------------

constexpr int64_t kLayers = 2, kHidden = 32, kHeads = 4, kVocab = 51, kPositions = 24;

/// GPT-2 weights in Hugging Face's names and Conv1D layout ([in, out]), float32.
std::vector<std::pair<std::string, at::Tensor>> make_hf_weights() {
  at::manual_seed(2024);
  const int64_t C = kHidden;
  auto normal = [](std::vector<int64_t> shape, double std) {
    return (at::randn(shape, at::kDouble) * std).to(at::kFloat);
  };
  std::vector<std::pair<std::string, at::Tensor>> w;
  w.emplace_back("transformer.wte.weight", normal({kVocab, C}, 0.3));
  w.emplace_back("transformer.wpe.weight", normal({kPositions, C}, 0.1));
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string h = "transformer.h." + std::to_string(l) + ".";
    w.emplace_back(h + "ln_1.weight", (1.0 + normal({C}, 0.1).to(at::kDouble)).to(at::kFloat));
    w.emplace_back(h + "ln_1.bias", normal({C}, 0.1));
    w.emplace_back(h + "attn.c_attn.weight", normal({C, 3 * C}, 0.2));
    w.emplace_back(h + "attn.c_attn.bias", normal({3 * C}, 0.1));
    w.emplace_back(h + "attn.c_proj.weight", normal({C, C}, 0.2));
    w.emplace_back(h + "attn.c_proj.bias", normal({C}, 0.1));
    w.emplace_back(h + "attn.bias", at::ones({1, 1, kPositions, kPositions}, at::kFloat).tril());
    w.emplace_back(h + "ln_2.weight", (1.0 + normal({C}, 0.1).to(at::kDouble)).to(at::kFloat));
    w.emplace_back(h + "ln_2.bias", normal({C}, 0.1));
    w.emplace_back(h + "mlp.c_fc.weight", normal({C, 4 * C}, 0.2));
    w.emplace_back(h + "mlp.c_fc.bias", normal({4 * C}, 0.1));
    w.emplace_back(h + "mlp.c_proj.weight", normal({4 * C, C}, 0.1));
    w.emplace_back(h + "mlp.c_proj.bias", normal({C}, 0.1));
  }
  w.emplace_back("transformer.ln_f.weight",
                 (1.0 + normal({C}, 0.1).to(at::kDouble)).to(at::kFloat));
  w.emplace_back("transformer.ln_f.bias", normal({C}, 0.1));
  w.emplace_back("lm_head.weight", w.front().second.clone());  // tied, as HF saves it
  return w;
}

/// A safetensors writer of the test's own: header unpadded, so the data may be unaligned.
void write_safetensors_here(const std::string& path,
                            const std::vector<std::pair<std::string, at::Tensor>>& tensors) {
  json header = {{"__metadata__", {{"format", "pt"}}}};
  int64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    const int64_t bytes = t.numel() * 4;
    header[name] = {
        {"dtype", "F32"}, {"shape", t.sizes().vec()}, {"data_offsets", {offset, offset + bytes}}};
    offset += bytes;
  }
  const std::string text = header.dump();
  const uint64_t length = text.size();
  std::ofstream out(path, std::ios::binary);
  out.write(reinterpret_cast<const char*>(&length), 8);
  out.write(text.data(), static_cast<std::streamsize>(text.size()));
  for (const auto& [name, t] : tensors) {
    const at::Tensor c = t.contiguous();
    out.write(static_cast<const char*>(c.data_ptr()), c.numel() * 4);
  }
}

/// GPT2LMHeadModel's forward in float64 from the HF tensors: the mean next-token loss of
/// windows (K, T + 1).
double plain_gpt2_loss(std::map<std::string, at::Tensor> w, const at::Tensor& windows) {
  for (auto& [name, t] : w) t = t.to(at::kDouble);
  const int64_t K = windows.size(0), T = windows.size(1) - 1, C = kHidden, hd = C / kHeads;
  const at::Tensor ids = windows.narrow(1, 0, T), targets = windows.narrow(1, 1, T);
  at::Tensor x = w["transformer.wte.weight"].index_select(0, ids.reshape({-1})).view({K, T, C}) +
                 w["transformer.wpe.weight"].narrow(0, 0, T);
  const at::Tensor future = at::ones({T, T}, at::kBool).triu(1);
  for (int64_t l = 0; l < kLayers; ++l) {
    const std::string h = "transformer.h." + std::to_string(l) + ".";
    at::Tensor a = at::layer_norm(x, {C}, w[h + "ln_1.weight"], w[h + "ln_1.bias"], 1e-5);
    const at::Tensor qkv = at::matmul(a, w[h + "attn.c_attn.weight"]) + w[h + "attn.c_attn.bias"];
    auto heads = [&](int64_t i) {
      return qkv.narrow(2, i * C, C).view({K, T, kHeads, hd}).transpose(1, 2);  // (K, nh, T, hd)
    };
    at::Tensor att = at::matmul(heads(0), heads(1).transpose(-2, -1)) / std::sqrt(double(hd));
    att = at::softmax(att.masked_fill(future, -INFINITY), -1);
    const at::Tensor y = at::matmul(att, heads(2)).transpose(1, 2).reshape({K, T, C});
    x = x + at::matmul(y, w[h + "attn.c_proj.weight"]) + w[h + "attn.c_proj.bias"];
    const at::Tensor m = at::layer_norm(x, {C}, w[h + "ln_2.weight"], w[h + "ln_2.bias"], 1e-5);
    const at::Tensor f =
        at::gelu(at::matmul(m, w[h + "mlp.c_fc.weight"]) + w[h + "mlp.c_fc.bias"], "tanh");
    x = x + at::matmul(f, w[h + "mlp.c_proj.weight"]) + w[h + "mlp.c_proj.bias"];
  }
  x = at::layer_norm(x, {C}, w["transformer.ln_f.weight"], w["transformer.ln_f.bias"], 1e-5);
  const at::Tensor logp = at::log_softmax(at::matmul(x, w["transformer.wte.weight"].t()), -1);
  return -logp.gather(-1, targets.unsqueeze(-1)).mean().item<double>();
}

TEST(CheckpointHf, independent_hf_files_import_and_eval_dp2_pp2_tp2_match_a_plain_forward) {
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_hf_test_");
  const std::string hf = dir + "/gpt2", tokens = dir + "/tokens.bin";
  constexpr int64_t K = 6, T = 16;
  const auto weights = make_hf_weights();
  std::map<std::string, at::Tensor> by_name(weights.begin(), weights.end());
  at::manual_seed(7);
  const at::Tensor stream = at::randint(0, kVocab, {K * T + 9}, at::kLong);
  if (world_rank() == 0) {
    std::filesystem::create_directories(hf);
    write_safetensors_here(hf + "/model.safetensors", weights);
    std::ofstream(hf + "/config.json") << json{
        {"model_type", "gpt2"},      {"n_layer", kLayers},
        {"n_embd", kHidden},         {"n_head", kHeads},
        {"vocab_size", kVocab},      {"n_positions", kPositions},
        {"n_ctx", kPositions},       {"activation_function", "gelu_new"},
        {"layer_norm_epsilon", 1e-5}}.dump();
    const at::Tensor u16 = stream.to(at::kInt);
    std::ofstream out(tokens, std::ios::binary);
    for (int64_t i = 0; i < u16.numel(); ++i) {
      const uint16_t t = static_cast<uint16_t>(u16[i].item<int>());
      out.write(reinterpret_cast<const char*>(&t), 2);
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);

  // The loss the test computes: windows [i*T, i*T + T] of the token stream.
  std::vector<at::Tensor> rows;
  for (int64_t i = 0; i < K; ++i) rows.push_back(stream.narrow(0, i * T, T + 1));
  const double want = plain_gpt2_loss(by_name, at::stack(rows));

  // `trident eval`'s code path at dp2 x pp2 x tp2 in float64.
  const std::vector<std::string> sets = {"parallel.dp=0",
                                         "parallel.pp=2",
                                         "parallel.tp=2",
                                         "parallel.zero_stage=0",
                                         "train.micro_batch_size=1",
                                         "train.global_batch_size=8",
                                         "train.precision=fp64"};
  const TrainConfig config = checkpoint_config(hf, "", sets, 8, SavedParallel::kNone);
  EXPECT_EQ(config.model.seq_len, kPositions);
  EXPECT_EQ(config.padded_vocab(), 52);  // one padding row at tp 2
  ParallelContext ctx(MPI_COMM_WORLD, 2, 2, 2, 120.0);
  {
    GptStage model(gpt_options(config), ctx.tp(), ctx.coord().pp, 2);
    load_model_weights(model, ctx, config, hf, "");
    const EvalResult got = evaluate_token_file(model, ctx, tokens, K, T, 2);
    EXPECT_EQ(got.tokens, K * T);
    EXPECT_LE(relative_difference(got.loss, want), 1e-10) << got.loss << " vs " << want;
    if (ctx.rank() == 0)
      std::printf(
          "eval of independent HF files at dp2_pp2_tp2: %.17g, plain forward %.17g "
          "(relative difference %.3g)\n",
          got.loss, want, relative_difference(got.loss, want));
  }

  // Import into a trainer with fewer positions than the file: the weights, exactly.
  std::vector<std::string> train_sets = sets;
  train_sets.push_back("model.seq_len=16");
  Trainer trainer(checkpoint_config(hf, "", train_sets, 8, SavedParallel::kNone), ctx);
  load_checkpoint(trainer, ctx, hf, "");
  EXPECT_EQ(trainer.completed_steps(), 0);
  for (const Parameter& p : trainer.model().params().params()) {
    const auto name = checkpoint::to_hf_name(p.spec.name);
    ASSERT_TRUE(name) << p.spec.name;
    at::Tensor global = by_name.at(name->name).to(at::kDouble);
    if (name->transposed) global = global.t();
    if (p.spec.name == "wpe.weight") global = global.narrow(0, 0, 16);
    if (p.spec.name == "wte.weight")
      global = at::cat({global, at::zeros({1, kHidden}, global.options())});
    EXPECT_TRUE(
        at::equal(p.tensor.detach(), cut_shard(p.spec, ctx.coord().tp, 2, global.contiguous())))
        << p.spec.name;
  }
  remove_shared(MPI_COMM_WORLD, dir);
}

}  // namespace
}  // namespace trident::testing
