// Multi-rank tests of what ZeRO stage 3 holds and moves on dp = 4: the bytes of model
// state against docs/zero.md's formula (bf16 and fp32), the peak of gathered parameters
// against the live bound, and the dp group's counters after one step against the
// analytic volume, for each reshard choice.
#include <ATen/ATen.h>    // tensors
#include <gtest/gtest.h>  // TEST, EXPECT_*
#include <mpi.h>          // MPI_COMM_WORLD

#include <algorithm>  // std::max
#include <cstdio>     // std::printf
#include <memory>     // std::unique_ptr
#include <string>

#include "common/counter_rng.h"         // random_u64
#include "common/memory_tracker.h"      // install_memory_tracker, live_tensor_bytes
#include "models/gpt.h"                 // GptStage, GptOptions
#include "mpi_cases.h"                  // register_mpi_cases
#include "mpi_test_util.h"              // tiny_gpt
#include "parallel/parallel_context.h"  // ParallelContext
#include "zero/buffer_assignment.h"     // buffer_of
#include "zero/zero_optimizer.h"        // ZeroOptimizer

namespace trident {
namespace {

const bool kRegistered = testing::register_mpi_cases(
    {{"zero3_dp4_memory_and_communication", 4, "Zero3Memory.*:Zero3Comm.*:Zero3Order.*"}});

constexpr int kDp = 4;
constexpr int kMicroBatches = 2;
constexpr int64_t kOneBucket = 1 << 20;  // larger than the model: one bucket per buffer
constexpr int64_t kPersistBelow = 20;    // norms (6) and the qkv bias (18) stay whole

/// hidden 6, so every buffer needs padding on dp = 4.
GptOptions tiny_model(at::ScalarType dtype, int64_t layers) {
  GptOptions o = testing::tiny_gpt(dtype);
  o.layers = layers;
  o.hidden = 6;
  o.vocab = 31;
  o.padded_vocab = 31;
  return o;
}

int64_t round_up(int64_t n, int64_t k) { return (n + k - 1) / k * k; }
int64_t element_bytes(at::ScalarType t) { return static_cast<int64_t>(c10::elementSize(t)); }

ZeroOptions stage3(int64_t bucket_size, bool reshard, bool prefetch = true, int live = 2) {
  ZeroOptions z;
  z.stage = 3;
  z.bucket_size = bucket_size;
  z.persist_below = kPersistBelow;
  z.gather.reshard_after_forward = reshard;
  z.gather.prefetch = prefetch;
  z.gather.max_live_layers = live;
  return z;
}

/// One optimizer step of m micro-batches of random tokens (the values do not matter here).
void one_step(ParallelContext& ctx, GptStage& model, ZeroOptimizer& opt) {
  const GptOptions& o = model.options();
  for (int j = 0; j < kMicroBatches; ++j) {
    at::Tensor ids = at::empty({1, o.seq_len + 1}, at::kLong);
    for (int64_t i = 0; i < ids.numel(); ++i)
      ids.data_ptr<int64_t>()[i] =
          static_cast<int64_t>(random_u64(3, ctx.rank() * 10 + j, i) % o.vocab);
    at::Tensor loss = model.forward(ids.narrow(1, 0, o.seq_len).contiguous(),
                                    ids.narrow(1, 1, o.seq_len).contiguous(), 1.0 / 64);
    opt.begin_backward(j == kMicroBatches - 1);
    loss.backward();
    opt.end_backward();
  }
  opt.reduce_gradients();
  opt.grad_norm();
  opt.step(1e-3, 1.0);
}

bool persistent(const Parameter& p, int64_t numel) {
  return buffer_of(p.spec, numel, 3, kPersistBelow) == kPersistentBuffer;
}

/// docs/zero.md, stage 3, one bucket per buffer: the sharded buffers (S, the embedding's
/// and the rest's, each padded) contribute k S / N_d of parameters; the persistent one (R,
/// padded) k R whole; gradients are the state-dtype shard of everything plus stage 2's two
/// bucket buffers of the largest multi-parameter bucket B; optimizer states as stage 2.
TEST(Zero3Memory, dp4_bytes_match_the_formula_for_bf16_and_fp32) {
  ParallelContext ctx(MPI_COMM_WORLD, kDp, 1, 1, 120.0);
  for (at::ScalarType dtype : {at::kBFloat16, at::kFloat}) {
    GptStage model(tiny_model(dtype, 1), ctx.tp(), 0, 1);
    int64_t embedding = 0, rest = 0, kept = 0, kept_params = 0;
    for (const Parameter& p : model.params().params()) {
      const int64_t n = p.tensor.numel();
      if (p.spec.name == "wte.weight") {
        embedding += n;
      } else if (persistent(p, n)) {
        kept += n;
        ++kept_params;
      } else {
        rest += n;
      }
    }
    ASSERT_GT(kept_params, 1);  // the persistent buffer is a multi-parameter bucket
    ZeroOptimizer opt(model.params().params(), ctx, stage3(kOneBucket, true), AdamWOptions{},
                      model.layer_units());
    const int64_t S = round_up(embedding, kDp) + round_up(rest, kDp), R = round_up(kept, kDp);
    const int64_t P = S + R, B = std::max(round_up(rest, kDp), R);
    const int64_t k = element_bytes(dtype), t = element_bytes(opt.transport_dtype());
    const int64_t state = 4, master = dtype == at::kBFloat16 ? 4 : 0;
    const ModelStateBytes got = opt.bytes();
    const std::string what = c10::toString(dtype);
    EXPECT_EQ(got.parameters, k * S / kDp + k * R) << what;
    EXPECT_EQ(got.gradients, state * P / kDp + 2 * (B + B / kDp) * t) << what;
    EXPECT_EQ(got.optimizer_states, (master + 2 * state) * P / kDp) << what;
    // Stage 2 of the same model holds every parameter whole.
    GptStage model2(tiny_model(dtype, 1), ctx.tp(), 0, 1);
    ZeroOptimizer opt2(model2.params().params(), ctx, ZeroOptions{2, kOneBucket}, AdamWOptions{});
    EXPECT_LT(got.parameters, opt2.bytes().parameters) << what;
    if (ctx.rank() == 0)
      std::printf(
          "[zero3 memory] dp4 %-8s psi %lld (sharded %lld, whole %lld): params %lld  "
          "grads %lld  optimizer %lld bytes (stage 2 params %lld)\n",
          what.c_str(), static_cast<long long>(embedding + rest + kept), static_cast<long long>(S),
          static_cast<long long>(R), static_cast<long long>(got.parameters),
          static_cast<long long>(got.gradients), static_cast<long long>(got.optimizer_states),
          static_cast<long long>(opt2.bytes().parameters));
  }
}

/// With every parameter its own bucket, a layer's gathered bytes are its own; the peak of
/// gathered buffers over a step stays within max_live_layers consecutive layers.
TEST(Zero3Memory, dp4_gathered_peak_stays_within_the_live_bound) {
  ParallelContext ctx(MPI_COMM_WORLD, kDp, 1, 1, 120.0);
  int64_t peaks[3] = {0, 0, 0};
  for (int live = 1; live <= 2; ++live) {
    GptStage model(tiny_model(at::kDouble, 4), ctx.tp(), 0, 1);
    ZeroOptimizer opt(model.params().params(), ctx, stage3(1, true, true, live), AdamWOptions{},
                      model.layer_units());
    model.set_layer_scope(opt.layer_scope());
    ParamGatherer& g = *opt.layer_scope();
    int64_t bound = 0, largest = 0, all = 0;
    for (int u = 0; u < g.num_units(); ++u) {
      int64_t window = 0;
      for (int v = u; v < std::min(u + live, g.num_units()); ++v) window += g.unit_bytes(v);
      bound = std::max(bound, window);
      largest = std::max(largest, g.unit_bytes(u));
      all += g.unit_bytes(u);
    }
    g.reset_peak();
    one_step(ctx, model, opt);
    peaks[live] = g.peak_gathered_bytes();
    EXPECT_LE(peaks[live], bound) << "max_live_layers " << live;
    EXPECT_GE(peaks[live], largest) << "max_live_layers " << live;
    EXPECT_LT(bound, all) << "the bound must be below the whole stage";
    EXPECT_EQ(g.gathered_bytes(), 0) << "nothing stays gathered after the step";
    if (ctx.rank() == 0)
      std::printf(
          "[zero3 live] dp4 max_live_layers %d: peak gathered %lld bytes, bound %lld, "
          "largest layer %lld, whole stage %lld\n",
          live, static_cast<long long>(peaks[live]), static_cast<long long>(bound),
          static_cast<long long>(largest), static_cast<long long>(all));
  }
  EXPECT_GT(peaks[2], peaks[1]) << "prefetch holds a second layer";
}

/// Bytes a forward of `model` leaves allocated (what its graph keeps for backward), on
/// random tokens; the backward then runs, so nothing is left over.
int64_t forward_keeps(ParallelContext& ctx, GptStage& model, ZeroOptimizer* opt) {
  const GptOptions& o = model.options();
  at::Tensor ids = at::empty({1, o.seq_len + 1}, at::kLong);
  for (int64_t i = 0; i < ids.numel(); ++i)
    ids.data_ptr<int64_t>()[i] = static_cast<int64_t>(random_u64(5, ctx.rank(), i) % o.vocab);
  const int64_t before = live_tensor_bytes();
  at::Tensor loss = model.forward(ids.narrow(1, 0, o.seq_len).contiguous(),
                                  ids.narrow(1, 1, o.seq_len).contiguous(), 1.0);
  const int64_t kept = live_tensor_bytes() - before;
  if (opt != nullptr) opt->begin_backward(true);
  loss.backward();
  if (opt != nullptr) {
    opt->end_backward();
    opt->reduce_gradients();
    opt->skip_step();
  }
  return kept;
}

// Autograd saves views of a layer's gathered weights (a linear keeps weight.t()) for the
// layer's backward. Those must not keep the weights in memory until then: the forward of
// 8 layers keeps its activations, and of the gathered weights at most the live bound and
// one layer of reusable buffers, never all 8 layers'.
TEST(Zero3Memory, dp4_a_forward_keeps_no_released_layers_weights) {
  install_memory_tracker();
  ParallelContext ctx(MPI_COMM_WORLD, kDp, 1, 1, 120.0);
  GptOptions o = tiny_model(at::kFloat, 8);
  o.hidden = 64, o.heads = 2, o.seq_len = 4;  // weights far above the activations
  GptStage plain(o, ctx.tp(), 0, 1);
  const int64_t activations = forward_keeps(ctx, plain, nullptr);

  GptStage model(o, ctx.tp(), 0, 1);
  const int live = 2;
  ZeroOptimizer opt(model.params().params(), ctx, stage3(1, true, true, live), AdamWOptions{},
                    model.layer_units());
  model.set_layer_scope(opt.layer_scope());
  const ParamGatherer& g = *opt.layer_scope();
  int64_t largest = 0, all = 0;
  for (int u = 0; u < g.num_units(); ++u) {
    largest = std::max(largest, g.unit_bytes(u));
    all += g.unit_bytes(u);
  }
  const int64_t kept = forward_keeps(ctx, model, &opt);
  EXPECT_LE(kept, activations + (live + 1) * largest)
      << "activations " << activations << ", a layer's weights " << largest;
  EXPECT_GT(activations + all, activations + (live + 1) * largest) << "8 layers exceed the bound";
  if (ctx.rank() == 0)
    std::printf(
        "[zero3 saved views] dp4, 8 layers: a forward keeps %lld bytes; its activations "
        "alone %lld; a layer's weights %lld, all layers' %lld\n",
        static_cast<long long>(kept), static_cast<long long>(activations),
        static_cast<long long>(largest), static_cast<long long>(all));
}

/// A rank that runs its layers in another order than its peers stops, with every peer,
/// with a message naming the ranks and the layers, instead of pairing wrong buffers.
TEST(Zero3Order, dp4_rank_gathering_another_layer_fails_with_a_message) {
  ParallelContext ctx(MPI_COMM_WORLD, kDp, 1, 1, 120.0);
  GptStage model(tiny_model(at::kDouble, 2), ctx.tp(), 0, 1);
  ZeroOptimizer opt(model.params().params(), ctx, stage3(1, true), AdamWOptions{},
                    model.layer_units());
  const int unit = ctx.dp().rank() == 2 ? 1 : 0;  // dp rank 2 starts with the first block
  try {
    opt.layer_scope()->begin_forward(unit);
    ADD_FAILURE() << "gathering layer " << unit << " did not fail";
  } catch (const std::exception& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("ZeRO stage 3: dp rank"), std::string::npos) << what;
    EXPECT_NE(what.find(unit == 1 ? "gathers layer 1 (h.0." : "dp rank 2 gathers layer 1 (h.0."),
              std::string::npos)
        << what;
  }
  EXPECT_EQ(opt.layer_scope()->gathered_bytes(), 0);
}

struct CommCase {
  at::ScalarType dtype;
  bool reshard;
};

/// docs/zero.md's stage 3 volume, with every parameter its own bucket: reduce-scatter
/// m P t, as stage 2; all-gather of the sharded layers' buckets 2m times per step (forward,
/// backward) when reshard after forward is on, once when it is off, plus the persistent
/// buffer once after the update, plus the 8-byte order check per layer gather.
TEST(Zero3Comm, dp4_one_step_moves_the_analytic_bytes) {
  ParallelContext ctx(MPI_COMM_WORLD, kDp, 1, 1, 120.0);
  for (const CommCase cc :
       {CommCase{at::kDouble, true}, CommCase{at::kDouble, false}, CommCase{at::kBFloat16, true}}) {
    GptStage model(tiny_model(cc.dtype, 2), ctx.tp(), 0, 1);
    ZeroOptimizer opt(model.params().params(), ctx, stage3(1, cc.reshard), AdamWOptions{},
                      model.layer_units());
    model.set_layer_scope(opt.layer_scope());
    const auto& params = model.params().params();
    const int64_t k = element_bytes(cc.dtype), t = element_bytes(opt.transport_dtype());
    int64_t P = 0, R = 0, R_calls = 0, n_params = static_cast<int64_t>(params.size());
    std::vector<int64_t> padded(params.size());
    std::vector<bool> sharded(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      // Sizes from the specs: stage 3 has emptied the parameters themselves.
      int64_t n = 1;
      for (int64_t d : params[i].spec.global_shape) n *= d;
      padded[i] = round_up(n, kDp);
      sharded[i] = !persistent(params[i], n);
      P += padded[i];
      if (!sharded[i]) R += padded[i], ++R_calls;
    }
    int64_t per_pass = 0, per_pass_calls = 0, distinct = 0, distinct_calls = 0;
    std::vector<bool> seen(params.size(), false);
    const auto& units = model.layer_units();
    for (const auto& unit : units) {
      for (size_t i : unit) {
        if (!sharded[i]) continue;
        per_pass += padded[i] * k;
        ++per_pass_calls;
        if (!seen[i]) distinct += padded[i] * k, ++distinct_calls;
        seen[i] = true;
      }
    }
    const int64_t U = static_cast<int64_t>(units.size());
    const int64_t gathers = cc.reshard ? 2 * kMicroBatches : 1;  // of each layer, per step
    const int64_t ag = (cc.reshard ? gathers * per_pass : distinct) + R * k + gathers * U * 8 * kDp;
    const int64_t ag_calls =
        (cc.reshard ? gathers * per_pass_calls : distinct_calls) + R_calls + gathers * U;
    const int64_t rs = kMicroBatches * P * t, rs_calls = kMicroBatches * n_params;

    Communicator& dp = ctx.dp();
    dp.reset_counters();
    one_step(ctx, model, opt);
    const std::string what = std::string(c10::toString(cc.dtype)) +
                             (cc.reshard ? " reshard after forward" : " kept gathered");
    EXPECT_EQ(dp.counter(CommKind::kReduceScatter).bytes, rs) << what;
    EXPECT_EQ(dp.counter(CommKind::kReduceScatter).calls, rs_calls) << what;
    EXPECT_EQ(dp.counter(CommKind::kAllGather).bytes, ag) << what;
    EXPECT_EQ(dp.counter(CommKind::kAllGather).calls, ag_calls) << what;
    EXPECT_EQ(dp.counter(CommKind::kAllReduce).bytes, 0) << what;
    if (ctx.rank() == 0)
      std::printf(
          "[zero3 comm] dp4 m=%d %-28s reduce_scatter %lld  all_gather %lld bytes "
          "(P k = %lld)\n",
          kMicroBatches, what.c_str(), static_cast<long long>(rs), static_cast<long long>(ag),
          static_cast<long long>(P * k));
  }
}

}  // namespace
}  // namespace trident
