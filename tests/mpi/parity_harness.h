// Runs a layout and the single-process reference of the same config side by side, for
// the parity tests: per-step losses and grad norms, and the final weights compared by
// layout-free name (each rank's shard against the same cut of the reference tensor).
#pragma once
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "config/config.h"
#include "mpi_test_util.h"  // Layout, relative_difference
#include "parallel/parallel_context.h"
#include "train/trainer.h"

namespace trident::testing {

/// The tiny model every parity test trains (4 layers so that pp 4 divides it): GPT-2, or
/// with `model` "llama"/"llama_tied" a Llama with 4 heads over 2 kv heads and a SwiGLU of 48.
std::string parity_config_toml(int global_batch_size, int steps, const std::string& model = "gpt2");

struct RunTrace {
  std::vector<double> losses;
  std::vector<double> grad_norms;
};

/// A Mixture-of-Experts row of the Llama ("llama_moe_<name>"): 4 experts of SwiGLU width 24
/// (split over tp like the dense MLP), the load-balancing loss at 0.01, and the given
/// switches: "top1" sends each token to one expert instead of two, "z" adds the router
/// z-loss, "every2" makes every second layer MoE and the others dense, "capacity" drops what
/// exceeds half the even share, "shared" adds a shared expert, "sigmoid" routes by sigmoid
/// scores with balancing biases that move by 0.01 a step (DeepSeek-V3).
Layout moe(Layout l, const std::vector<std::string>& switches = {});

/// The end-of-document token of documents_file(), the last of the parity vocabulary.
constexpr int kDocumentsEnd = 63;
/// The override that layout_config replaces by "data.source=" + documents_file().
constexpr const char* kDocumentsSource = "data.source=<documents>";
/// A raw uint16 token file (made once per process, removed at its exit) of documents of 2
/// to 10 tokens, each followed by kDocumentsEnd: documents end at different places in
/// different ranks' chunks of a sequence.
std::string documents_file();
/// `l` trained on documents_file() with the loss leaving out the predictions made from each
/// document's end (data.eod_token): the tokens counted differ from rank to rank. Its last
/// quarter of windows is held out for validation.
Layout documents(Layout l);

/// The override that layout_config replaces by a [[data.mix]] of documents_file() (weight
/// 0.7) and patterns_file() (0.3).
constexpr const char* kMixtureSource = "data.mix=<mixture>";
/// A raw uint16 token file of short runs of consecutive tokens (made once per process).
std::string patterns_file();
/// `l` trained on that mixture in epochs, a quarter of each file held out for validation.
Layout mixture(Layout l);

/// `l` with its experts shared out over `ep` of its dp ranks.
Layout ep(Layout l, int ep);

/// `l` with each sequence split over `cp` ranks (context parallelism).
Layout cp(Layout l, int cp);

/// `l` trained with Muon (optimizer.name = "muon"), its name prefixed "muon_"; `spectral`
/// scales the updates by sqrt(max(1, A/B)) with their own learning rate.
Layout muon(Layout l, bool spectral = false);

/// Trains `steps` steps of `config` on `ctx`, returning what every rank agrees on.
RunTrace train_steps(Trainer& trainer, int steps);

/// Config for `layout` (dp, pp, tp, ZeRO, schedule, checkpointing, micro-batch size,
/// precision, bucket size).
TrainConfig layout_config(const Layout& layout, int steps, int global_batch_size = 8);

/// How final weights are compared, per parameter tensor against the reference's.
enum class WeightMetric {
  kMaxElement,  // max |w - w_ref| / max |w_ref|: every element (fp64)
  kNorm,        // ||w - w_ref|| / ||w_ref||: the tensor as a whole (fp32), leaving out
                // the attention key bias, whose gradient is zero in exact arithmetic and
                // whose fp32 updates are Adam-normalised rounding noise
};

/// Largest relative difference of this rank's parameter shards from the reference's.
double max_weight_difference(Trainer& layout, const ParallelContext& ctx, Trainer& reference,
                             WeightMetric metric);

}  // namespace trident::testing
