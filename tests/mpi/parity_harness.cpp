// The parity harness: config construction, training, and weight comparison.
#include "parity_harness.h"

#include <ATen/ATen.h>
#include <unistd.h>  // getpid

#include <algorithm>
#include <cmath>
#include <cstdio>  // std::remove
#include <cstdlib>
#include <fstream>
#include <map>
#include <random>

#include "models/gpt.h"
#include "tensor_parallel/parameter.h"
#include "zero/zero_optimizer.h"  // gather_params

namespace trident::testing {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

std::string parity_config_toml(int global_batch_size, int steps, const std::string& model) {
  std::string llama;
  if (model != "gpt2")
    llama =
        "arch = \"llama\"\nkv_heads = 2\nffn_hidden = 48\nrope_theta = 500.0\n"
        "norm_eps = 1e-6\ntie_embeddings = " +
        std::string(model == "llama_tied" ? "true" : "false") + "\n";
  return "[model]\nlayers = 4\nhidden = 32\nheads = 4\nvocab = 64\nseq_len = 16\n" + llama +
         "[train]\nglobal_batch_size = " + std::to_string(global_batch_size) +
         "\nsteps = " + std::to_string(steps) +
         "\nseed = 7\nlog_every = 1\n"
         "[optimizer]\nlr = 0.01\nmin_lr = 0.001\nwarmup_steps = 2\nweight_decay = 0.1\n"
         "grad_clip = 1.0\n"
         // A tiny bucket so that gradients are reduced in several buckets.
         "[parallel]\nbucket_size = 2000\ntimeout_s = 120\n"
         "[data]\nmarkov_successors = 4\n"
         // Validation on 12 sequences: padding fills the last global batch of 8.
         "[eval]\nsequences = 12\n";
}

TrainConfig layout_config(const Layout& l, int steps, int global_batch_size) {
  std::vector<std::string> sets = {
      "parallel.dp=" + std::to_string(l.dp),
      "parallel.pp=" + std::to_string(l.pp),
      "parallel.tp=" + std::to_string(l.tp),
      "parallel.ep=" + std::to_string(l.ep),
      "parallel.cp=" + std::to_string(l.cp),
      "parallel.zero_stage=" + std::to_string(l.zero),
      "parallel.schedule=" + l.schedule,
      std::string("parallel.activation_checkpointing=") + (l.checkpointing ? "full" : "none"),
      "train.micro_batch_size=" + std::to_string(l.micro_batch_size),
      "train.precision=" + l.precision,
      "parallel.bucket_size=" + std::to_string(l.bucket_size),
  };
  // ZeRO 3: norms and most biases (32, 96 elements) stay gathered, the rest does not. The
  // key is refused below stage 3, where it would change nothing.
  if (l.zero == 3) sets.emplace_back("parallel.zero3_persist_below=100");
  for (const std::string& set : l.sets) {
    if (set == kDocumentsSource)
      sets.push_back("data.source=" + documents_file());
    else if (set == kMixtureSource)
      sets.push_back("data.mix=[{name = \"documents\", path = \"" + documents_file() +
                     "\", weight = 0.7}, {name = \"patterns\", path = \"" + patterns_file() +
                     "\", weight = 0.3}]");
    else
      sets.push_back(set);
  }
  return parse_config(parity_config_toml(global_batch_size, steps, l.model),
                      "<parity " + l.name + ">", sets, l.world());
}

std::string documents_file() {
  // One file per process (the reference runs in the same process), removed at exit.
  struct File {
    std::string path = "/tmp/trident_parity_documents_" + std::to_string(getpid()) + ".bin";
    File() {
      std::mt19937 rng(11);
      std::vector<uint16_t> tokens;
      while (tokens.size() < 4096) {
        const int length = 2 + static_cast<int>(rng() % 9);  // 2 .. 10 tokens, then the end
        for (int i = 0; i < length; ++i)
          tokens.push_back(static_cast<uint16_t>(rng() % kDocumentsEnd));
        tokens.push_back(kDocumentsEnd);
      }
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(tokens.data()),
                 static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
    }
    ~File() { std::remove(path.c_str()); }
  };
  static const File file;
  return file.path;
}

std::string patterns_file() {
  struct File {
    std::string path = "/tmp/trident_parity_patterns_" + std::to_string(getpid()) + ".bin";
    File() {
      std::mt19937 rng(23);
      std::vector<uint16_t> tokens;
      while (tokens.size() < 4096) {  // runs of a token counting up from a random start
        const int start = static_cast<int>(rng() % kDocumentsEnd),
                  length = 3 + static_cast<int>(rng() % 6);
        for (int i = 0; i < length; ++i)
          tokens.push_back(static_cast<uint16_t>((start + i) % kDocumentsEnd));
      }
      std::ofstream(path, std::ios::binary)
          .write(reinterpret_cast<const char*>(tokens.data()),
                 static_cast<std::streamsize>(tokens.size() * sizeof(uint16_t)));
    }
    ~File() { std::remove(path.c_str()); }
  };
  static const File file;
  return file.path;
}

Layout documents(Layout l) {
  l.name += "_documents";
  // A token file's validation windows are its held-out last quarter. Each rank reads its own
  // copy of the file (the path names the process), as nodes may: the order of the epochs
  // must not depend on the path.
  l.sets.insert(l.sets.end(), {kDocumentsSource, "data.eod_token=" + std::to_string(kDocumentsEnd),
                               "data.valid_fraction=0.25", "data.order=epochs"});
  return l;
}

Layout mixture(Layout l) {
  l.name += "_mix";
  l.sets.insert(l.sets.end(), {kMixtureSource, "data.order=epochs", "data.valid_fraction=0.25"});
  return l;
}

Layout moe(Layout l, const std::vector<std::string>& switches) {
  l.name = "llama_moe_" + l.name;
  l.model = "llama";
  l.sets.insert(l.sets.end(), {"model.moe_experts=4", "model.moe_ffn_hidden=24",
                               "model.moe_aux_loss_coeff=0.01"});
  for (const std::string& s : switches) {
    if (s == "top1") l.sets.push_back("model.moe_top_k=1");
    if (s == "z") l.sets.push_back("model.moe_z_loss_coeff=0.001");
    if (s == "every2") l.sets.push_back("model.moe_layer_every=2");
    // 4 of a sequence's 16 tokens an expert (16 * 2 / 4 * 0.5): some are dropped
    if (s == "capacity") l.sets.push_back("model.moe_capacity_factor=0.5");
    if (s == "shared") l.sets.push_back("model.moe_shared_expert=true");
    if (s == "sigmoid")
      l.sets.insert(l.sets.end(), {"model.moe_router=sigmoid", "model.moe_bias_update_rate=0.01"});
  }
  return l;
}

Layout ep(Layout l, int ep) {
  l.ep = ep;
  return l;
}

Layout cp(Layout l, int cp) {
  l.cp = cp;
  return l;
}

Layout muon(Layout l, bool spectral) {
  l.name = "muon_" + l.name;
  l.sets.push_back("optimizer.name=muon");
  if (spectral)
    l.sets.insert(l.sets.end(), {"optimizer.muon_scale=spectral", "optimizer.muon_lr=0.01"});
  return l;
}

RunTrace train_steps(Trainer& trainer, int steps) {
  RunTrace trace;
  for (int s = 0; s < steps; ++s) {
    const StepMetrics m = trainer.step();
    trace.losses.push_back(m.loss);
    trace.grad_norms.push_back(m.grad_norm);
  }
  return trace;
}

double max_weight_difference(Trainer& layout, const ParallelContext& ctx, Trainer& reference,
                             WeightMetric metric) {
  std::map<std::string, at::Tensor> full;
  for (const auto& p : reference.model().params().params())
    full[p.spec.name] = p.tensor.detach().to(at::kDouble);
  double worst = 0;
  const int tp_rank = ctx.coord().tp, tp = ctx.grid().tp();
  layout.optimizer().gather_params();  // ZeRO stage 3: whole parameters, on purpose
  for (const auto& p : layout.model().params().params()) {
    at::Tensor expected = cut_shard(p.spec, tp_rank, tp, full.at(p.spec.name));
    at::Tensor got = p.tensor.detach().to(at::kDouble);
    if (metric == WeightMetric::kNorm && ends_with(p.spec.name, "attn.qkv.bias")) {
      // The key bias adds the same q.b_k to every score of a query, which softmax ignores:
      // its gradient is zero in exact arithmetic, and in fp32 Adam normalises the rounding
      // noise that stands in for it into updates of up to lr. Compare q and v only.
      const int64_t third = got.size(0) / 3;
      expected = at::cat({expected.narrow(0, 0, third), expected.narrow(0, 2 * third, third)});
      got = at::cat({got.narrow(0, 0, third), got.narrow(0, 2 * third, third)});
    }
    const at::Tensor diff = got - expected;
    const double d = metric == WeightMetric::kMaxElement
                         ? diff.abs().max().item<double>() / expected.abs().max().item<double>()
                         : diff.norm().item<double>() / expected.norm().item<double>();
    if (expected.abs().max().item<double>() > 0) worst = std::max(worst, d);
    if (std::getenv("TRIDENT_PARITY_DEBUG")) std::printf("  %s %.3g\n", p.spec.name.c_str(), d);
  }
  layout.optimizer().release_params();
  return worst;
}

}  // namespace trident::testing
