// ZeRO offload's nvme tier keeps every number: each row trains a layout for 5 steps with
// the optimizer's shard (and in stage 3 the parameter shard) in files, and the same layout
// in memory, and requires losses, grad norms and final weights to be bitwise equal; it
// also compares the offloaded run with the single process at 1e-10 (fp64).
#include <ATen/ATen.h>  // at::equal
#include <gtest/gtest.h>
#include <mpi.h>

#include <map>
#include <string>
#include <vector>

#include "checkpoint/index.h"       // open_checkpoint
#include "checkpoint/reader.h"      // read_global_tensor
#include "checkpoint_test_util.h"   // same_state, expect_resume_matches
#include "common/memory_tracker.h"  // install_memory_tracker, peak_tensor_bytes
#include "mpi_cases.h"              // register_mpi_cases
#include "parity_harness.h"
#include "train/checkpointing.h"  // save_checkpoint, load_checkpoint of a Trainer
#include "train/run_report.h"     // count_parameters
#include "zero/zero_optimizer.h"  // gather_params, states_in_tier, tier_stats

namespace trident::testing {
namespace {

constexpr int kSteps = 5;

/// The offload keys for a tier under `dir`, with blocks of one update chunk so that the
/// ring of 3 buffers wraps many times.
std::vector<std::string> nvme_sets(const std::string& dir, bool params) {
  std::vector<std::string> sets = {"parallel.offload_optimizer=nvme", "parallel.nvme_path=" + dir,
                                   "parallel.offload_buffer_count=3",
                                   "parallel.offload_block_size=4096"};
  if (params) sets.push_back("parallel.offload_params=nvme");
  return sets;
}

struct OffloadLayout {
  Layout layout;
  bool params = false;  // offload_params = "nvme" too (stage 3)
};

const OffloadLayout kOffloadLayouts[] = {
    {{"dp2_zero1_nvme", 2, 1, 1, 1, "1f1b", false, 2}},
    {{"dp2_zero2_nvme", 2, 1, 1, 2, "1f1b", false, 2}},
    {{"dp2_zero2_nvme_fp32", 2, 1, 1, 2, "1f1b", false, 2, "fp32"}},
    {{"dp2_pp2_tp2_1f1b_ckpt_zero2_nvme", 2, 2, 2, 2, "1f1b", true, 1}},
    {{"dp2_pp2_1f1b_ckpt_zero3_nvme_params", 2, 2, 1, 3, "1f1b", true, 1}, true},
    // Stage 3 with parameters, gradients and optimizer states in the tier, with and
    // without recomputation (without: the gathered weights autograd saved are freed after
    // forward and gathered again into the same storage for backward).
    {{"dp2_zero3_nvme_params", 2, 1, 1, 3, "1f1b", false, 2}, true},
    {{"dp2_zero3_ckpt_nvme_params", 2, 1, 1, 3, "1f1b", true, 2}, true},
    {{"dp2_pp2_tp2_1f1b_zero3_nvme_params", 2, 2, 2, 3, "1f1b", false, 2}, true},
    // Buckets of ~100k elements per rank: several pieces of 64 Ki elements each.
    {{"dp2_zero2_nvme_multi_piece",
      2,
      1,
      1,
      2,
      "1f1b",
      false,
      2,
      "fp64",
      1 << 20,
      {"model.hidden=64"}}},
    // With sequence parallelism and interleaved 1F1B: the tier sees only the optimizer's shard.
    {{"sp_dp2_pp2_tp2_interleaved_v2_zero2_nvme",
      2,
      2,
      2,
      2,
      "interleaved-1f1b",
      false,
      1,
      "fp64",
      2000,
      {"parallel.virtual_stages=2", "parallel.sequence_parallel=true"}}},
    // Expert parallelism: the experts' buffers, sharded over the expert-dp group, in the
    // tier beside the others.
    {moe(ep({"dp4_ep2_zero3_nvme_params", 4, 1, 1, 3, "1f1b", false, 1}, 2), {"shared"}), true},
    // Context parallelism: the states sharded over dp x cp ranks, in the tier.
    {cp({"cp2_zero2_nvme", 1, 1, 1, 2, "1f1b", false, 2}, 2)},
    {cp({"dp2_cp2_zero3_nvme_params", 2, 1, 1, 3, "1f1b", false, 1}, 2), true},
};

/// Every weight of `a` equals `b`'s bit for bit (stage 3: gathered whole on purpose).
void expect_equal_weights(Trainer& a, Trainer& b) {
  a.optimizer().gather_params();
  b.optimizer().gather_params();
  const auto& pa = a.model().params().params();
  const auto& pb = b.model().params().params();
  ASSERT_EQ(pa.size(), pb.size());
  for (size_t i = 0; i < pa.size(); ++i)
    EXPECT_TRUE(at::equal(pa[i].tensor.detach(), pb[i].tensor.detach())) << pa[i].spec.name;
  a.optimizer().release_params();
  b.optimizer().release_params();
}

class Offload : public ::testing::TestWithParam<OffloadLayout> {};

TEST_P(Offload, is_bitwise_the_run_in_memory_and_matches_one_process) {
  const Layout& base = GetParam().layout;
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_offload_");
  ParallelContext ctx(MPI_COMM_WORLD, base.dp, base.pp, base.tp, 120.0, base.ep, base.cp);

  Layout offloaded = base;
  for (const std::string& set : nvme_sets(dir + "/tier", GetParam().params))
    offloaded.sets.push_back(set);
  Trainer tiered(layout_config(offloaded, kSteps), ctx);
  ASSERT_TRUE(tiered.optimizer().states_in_tier());
  // The tier holds no state in memory: what remains counted is the ring of buffers.
  const int64_t ring = tiered.optimizer().bytes().optimizer_states;
  const int64_t gradients = tiered.optimizer().bytes().gradients;
  const TierStats start = tiered.optimizer().tier_stats();
  const RunTrace got = train_steps(tiered, kSteps);

  Trainer in_memory(layout_config(base, kSteps), ctx);
  const RunTrace want = train_steps(in_memory, kSteps);
  // 3 buffers of both moments (fp64/fp32 parameters are their own master), the gradient
  // (stages 2 and 3) and the parameter (offloaded in stage 3), at most one update chunk
  // each: the block size of 4096 bytes rounds up to one chunk.
  const int64_t element = base.precision == "fp64" ? 8 : 4;
  const int planes = 2 + (base.zero >= 2 ? 1 : 0) + (GetParam().params ? 1 : 0);
  EXPECT_GT(ring, 0);
  EXPECT_LE(ring, 3 * planes * ZeroOptimizer::kUpdateChunk * element);
  for (int s = 0; s < kSteps; ++s) {
    EXPECT_EQ(got.losses[s], want.losses[s]) << "step " << s + 1;
    EXPECT_EQ(got.grad_norms[s], want.grad_norms[s]) << "step " << s + 1;
  }
  expect_equal_weights(tiered, in_memory);
  // Start-up wrote the whole file once and every step read and wrote it again. From stage
  // 2 on the reduced gradient goes to the tier as well: written as it arrives (every bucket
  // at least once a step) instead of by the update, which only reads it, and read for the
  // norm; stage 3's gathers read the parameter shard besides.
  const TierStats stats = tiered.optimizer().tier_stats();
  const int64_t pass = start.bytes_written;
  EXPECT_GT(pass, 0);
  EXPECT_EQ(start.bytes_read, 0);
  if (base.zero >= 2) {
    EXPECT_GE(stats.bytes_written, pass * (kSteps + 1));
    EXPECT_GT(stats.bytes_read, kSteps * pass);
    // In memory only stage 2's two bucket buffers stay, never the gradient shard.
    EXPECT_LT(gradients, in_memory.optimizer().bytes().gradients);
  } else {
    EXPECT_EQ(stats.bytes_written, pass * (kSteps + 1));
    EXPECT_EQ(stats.bytes_read, kSteps * pass);
  }

  Layout single{"single", 1, 1, 1, 0, "1f1b", false, 2, base.precision};
  single.model = base.model;
  for (const std::string& set : base.sets)  // the same model
    if (set.rfind("model.", 0) == 0) single.sets.push_back(set);
  ParallelContext solo(MPI_COMM_SELF, 1, 1, 1, 120.0);
  Trainer reference(layout_config(single, kSteps), solo);
  const RunTrace ref = train_steps(reference, kSteps);
  // The count `trident train` prints: the same model in every layout, although a stage-3
  // rank holds no parameter whole between gathers.
  EXPECT_EQ(count_parameters(tiered, ctx), count_parameters(reference, solo));
  const double tolerance = base.precision == "fp64" ? 1e-10 : 1e-5;
  for (int s = 0; s < kSteps; ++s)
    EXPECT_LE(relative_difference(got.losses[s], ref.losses[s]), tolerance) << "step " << s + 1;
  const double weights = max_weight_difference(
      tiered, ctx, reference,
      base.precision == "fp64" ? WeightMetric::kMaxElement : WeightMetric::kNorm);
  EXPECT_LE(weights, tolerance);
  // Validation through the tier (stage 3 gathers its parameters from it): bitwise the run
  // in memory's, and the single process's within the tolerance.
  const ValidationResult tiered_val = tiered.validate();
  EXPECT_EQ(tiered_val.loss, in_memory.validate().loss);
  EXPECT_LE(relative_difference(tiered_val.loss, reference.validate().loss), tolerance);
  std::printf("%s: bitwise equal to the run in memory; weights differ from one process by %.3g\n",
              base.name.c_str(), weights);
  remove_shared(MPI_COMM_WORLD, dir);
}

INSTANTIATE_TEST_SUITE_P(Layouts, Offload, ::testing::ValuesIn(kOffloadLayouts),
                         [](const auto& info) { return info.param.layout.name; });

/// Bytes of the rank's optimizer state: parameters, master weights and both moments of the
/// elements it owns, wherever they live.
int64_t state_bytes(ZeroOptimizer& opt) {
  int64_t bytes = 0;
  opt.visit_states(
      [&](const StateWindow& window) {
        for (const auto& [i, v] : window) {
          bytes += v.param.nbytes() + v.exp_avg.nbytes() + v.exp_avg_sq.nbytes();
          if (!v.master.is_same(v.param)) bytes += v.master.nbytes();
        }
      },
      StateAccess::kLayout);
  return bytes;
}

/// Tensor bytes a phase allocated beyond what was live when it began, at its peak.
template <typename Phase>
int64_t peak_growth(const Phase& phase) {
  reset_peak_tensor_bytes();
  const int64_t before = live_tensor_bytes();
  phase();
  return peak_tensor_bytes() - before;
}

// Checkpoints of an offloaded run: saving reads the tier, loading writes it, both window
// by window, never holding the tier's states whole in memory. A run stopped at step 5 and
// resumed (offloaded again) continues bit for bit, and the checkpoint loads into other
// layouts, offloaded or not, that continue within 1e-10.
TEST(OffloadCheckpoint, dp2_pp2_zero3_nvme_resumes_exactly_and_in_other_layouts) {
  install_memory_tracker();
  constexpr int kTotal = 8, kSaveAt = 4;
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_offload_ckpt_");
  Layout source{"dp2_pp2_1f1b_ckpt_zero3_nvme", 2, 2, 1, 3, "1f1b", true, 1};
  source.sets = nvme_sets(dir + "/tier", true);
  const TrainConfig config = layout_config(source, kTotal);
  ParallelContext ctx(MPI_COMM_WORLD, source.dp, source.pp, source.tp, 120.0);

  Trainer full(config, ctx);
  const RunTrace want = train_steps(full, kTotal);
  const checkpoint::CheckpointIndex final_state =
      checkpoint::open_checkpoint(save_checkpoint(full, ctx, dir + "/full", 0), "");
  std::string stopped;
  {
    Trainer first(config, ctx);
    train_steps(first, kSaveAt);
    const int64_t states = state_bytes(first.optimizer());
    const int64_t saving =
        peak_growth([&] { stopped = save_checkpoint(first, ctx, dir + "/stopped", 0); });
    // Bringing the shard in, as a save did before it streamed, allocates all of `states`.
    EXPECT_LT(saving * 10, states) << "rank " << ctx.rank() << ": the save allocated " << saving
                                   << " bytes for " << states << " bytes of state";
  }
  Trainer resumed(config, ctx);
  const int64_t states = state_bytes(resumed.optimizer());
  const int64_t loading =
      peak_growth([&] { load_checkpoint(resumed, ctx, "latest", dir + "/stopped"); });
  EXPECT_LT(loading * 10, states) << "rank " << ctx.rank() << ": the load allocated " << loading
                                  << " bytes for " << states << " bytes of state";
  EXPECT_TRUE(resumed.optimizer().states_in_tier());  // loading wrote the tier
  const RunTrace got = train_steps(resumed, kTotal - kSaveAt);
  for (int s = 0; s < kTotal - kSaveAt; ++s) {
    EXPECT_EQ(got.losses[s], want.losses[kSaveAt + s]) << "step " << kSaveAt + s + 1;
    EXPECT_EQ(got.grad_norms[s], want.grad_norms[kSaveAt + s]) << "step " << kSaveAt + s + 1;
  }
  EXPECT_TRUE(same_state(resumed, full)) << "rank " << ctx.rank() << ": states differ";

  Layout dp4_nvme{"dp4_zero1_nvme", 4, 1, 1, 1, "1f1b", false, 1};
  dp4_nvme.sets = nvme_sets(dir + "/tier_dp4", false);
  const Layout targets[] = {dp4_nvme, {"dp1_pp1_tp1", 1, 1, 1, 0, "1f1b", false, 2}};
  for (const Layout& target : targets)
    expect_resume_matches(target, stopped, kSaveAt, kTotal, want.losses, final_state);
  remove_shared(MPI_COMM_WORLD, dir);
}

// A bf16 run whose layers span several pieces of the tier: the streamed save cuts
// parameters at the pieces' edges, and writes the fp32 states in one pass over the tier
// and the bf16 parameters in a second. Every stored tensor equals what the same layout in
// memory saves, and the checkpoint resumes the offloaded run bit for bit.
TEST(OffloadCheckpoint, bf16_pieces_save_what_memory_saves_and_resume_bitwise) {
  constexpr int kTotal = 5, kSaveAt = 3;
  const std::string dir = shared_temp_dir(MPI_COMM_WORLD, "trident_offload_bf16_");
  // Layers of 12 x 128^2 elements: about 98k per rank, two pieces of 64 Ki.
  const Layout memory{"dp2_zero3_bf16",    2, 1, 1, 3, "1f1b", false, 2, "bf16", 1 << 20,
                      {"model.hidden=128"}};
  Layout tiered = memory;
  for (const std::string& set : nvme_sets(dir + "/tier", true)) tiered.sets.push_back(set);
  ParallelContext ctx(MPI_COMM_WORLD, memory.dp, memory.pp, memory.tp, 120.0);
  Trainer in_memory(layout_config(memory, kTotal), ctx);
  Trainer offloaded(layout_config(tiered, kTotal), ctx);
  train_steps(in_memory, kSaveAt);
  train_steps(offloaded, kSaveAt);
  const checkpoint::CheckpointIndex a =
      checkpoint::open_checkpoint(save_checkpoint(in_memory, ctx, dir + "/memory", 0), "");
  const checkpoint::CheckpointIndex b =
      checkpoint::open_checkpoint(save_checkpoint(offloaded, ctx, dir + "/offloaded", 0), "");
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  int cut = 0;  // tensors the tier's pieces stored in more slices than memory did
  for (const auto& [name, info] : a.tensors) {
    ASSERT_EQ(b.tensors.count(name), 1u) << name;
    cut += b.tensors.at(name).slices.size() > info.slices.size();
    EXPECT_TRUE(
        at::equal(checkpoint::read_global_tensor(a, name), checkpoint::read_global_tensor(b, name)))
        << name;
  }
  EXPECT_GT(cut, 0);
  const RunTrace want = train_steps(in_memory, kTotal - kSaveAt);
  Trainer resumed(layout_config(tiered, kTotal), ctx);
  load_checkpoint(resumed, ctx, "latest", dir + "/offloaded");
  const RunTrace got = train_steps(resumed, kTotal - kSaveAt);
  EXPECT_EQ(got.losses, want.losses);
  EXPECT_EQ(got.grad_norms, want.grad_norms);
  remove_shared(MPI_COMM_WORLD, dir);
}

/// The ctest entries: one mpirun per rank count (offload_nvme_np2, ...), the checkpoint test
/// with the 4-rank layouts; the job's output ends with each test's outcome.
std::vector<MpiCase> offload_cases() {
  std::map<int, std::vector<std::string>> by_ranks;
  for (const OffloadLayout& l : kOffloadLayouts)
    by_ranks[l.layout.world()].push_back(
        "Layouts/Offload.is_bitwise_the_run_in_memory_and_matches_one_process/" + l.layout.name);
  by_ranks[2].push_back("OffloadCheckpoint.bf16*");
  by_ranks[4].push_back("OffloadCheckpoint.dp2_pp2*");
  std::vector<MpiCase> cases;
  for (const auto& [ranks, tests] : by_ranks)
    cases.push_back(grouped_case("offload_nvme_np" + std::to_string(ranks), ranks, tests));
  return cases;
}
const bool kRegistered = register_mpi_cases(offload_cases());

}  // namespace
}  // namespace trident::testing
