// The layout invariant: every layout trains the same model as one process. Each case runs
// a layout for 5 steps beside the single-process reference of the same config and compares
// per-step loss and grad norm, and the final weights, to a relative 1e-10 in fp64 (1e-5 in
// fp32, where the weights are compared tensor by tensor in norm: see WeightMetric). Each
// layout is one line of a table below: it becomes the test Layouts/Parity.*/<name>, run in
// one mpirun with the other layouts of its rank count, precision and model family (ctest
// entries parity_np8_fp64, parity_np2_fp64_llama, ...), whose output ends with each
// layout's outcome.
#include <gtest/gtest.h>
#include <mpi.h>

#include <iterator>  // std::begin, std::end
#include <map>
#include <string>
#include <utility>  // std::pair
#include <vector>

#include "mpi_cases.h"  // register_mpi_cases
#include "parity_harness.h"

namespace trident::testing {
namespace {

constexpr int kSteps = 5;
constexpr const char* kV2 = "parallel.virtual_stages=2";
constexpr const char* kL8 = "model.layers=8";  // pp 4 x 2 chunks: one layer per chunk
// More embedding rows per rank (512 / tp) than a step has tokens (128).
constexpr const char* kV512 = "model.vocab=512";

// name, dp, pp, tp, zero, schedule, checkpointing, micro-batch size, precision.
const Layout kLayouts[] = {
    // Tensor parallelism, with one and with four micro-batches (global batch 8).
    {"tp1_m1", 1, 1, 1, 0, "1f1b", false, 8},
    {"tp1_m4", 1, 1, 1, 0, "1f1b", false, 2},
    {"tp2_m1", 1, 1, 2, 0, "1f1b", false, 8},
    {"tp2_m4", 1, 1, 2, 0, "1f1b", false, 2},
    {"tp4_m1", 1, 1, 4, 0, "1f1b", false, 8},
    {"tp4_m4", 1, 1, 4, 0, "1f1b", false, 2},
    {"tp2_m4_fp32", 1, 1, 2, 0, "1f1b", false, 2, "fp32"},
    {"tp4_m4_fp32", 1, 1, 4, 0, "1f1b", false, 2, "fp32"},
    // Pipeline parallelism: both schedules, with and without activation checkpointing.
    {"pp2_gpipe", 1, 2, 1, 0, "gpipe", false, 2},
    {"pp2_gpipe_ckpt", 1, 2, 1, 0, "gpipe", true, 2},
    {"pp2_1f1b", 1, 2, 1, 0, "1f1b", false, 2},
    {"pp2_1f1b_ckpt", 1, 2, 1, 0, "1f1b", true, 2},
    {"pp4_gpipe", 1, 4, 1, 0, "gpipe", false, 1},
    {"pp4_gpipe_ckpt", 1, 4, 1, 0, "gpipe", true, 1},
    {"pp4_1f1b", 1, 4, 1, 0, "1f1b", false, 1},
    {"pp4_1f1b_ckpt", 1, 4, 1, 0, "1f1b", true, 1},
    {"tp2_pp2_1f1b_ckpt", 1, 2, 2, 0, "1f1b", true, 2},
    // Data parallelism with ZeRO, and the full 3D grid.
    {"dp2_zero0", 2, 1, 1, 0, "1f1b", false, 2},
    {"dp2_zero1", 2, 1, 1, 1, "1f1b", false, 2},
    {"dp2_zero2", 2, 1, 1, 2, "1f1b", false, 2},
    {"dp4_zero0", 4, 1, 1, 0, "1f1b", false, 1},
    {"dp4_zero1", 4, 1, 1, 1, "1f1b", false, 1},
    {"dp4_zero2", 4, 1, 1, 2, "1f1b", false, 1},
    {"dp2_pp2_tp2_1f1b_ckpt_zero1", 2, 2, 2, 1, "1f1b", true, 1},
    {"dp2_pp2_tp2_1f1b_ckpt_zero2", 2, 2, 2, 2, "1f1b", true, 1},
    {"dp2_zero2_fp32", 2, 1, 1, 2, "1f1b", false, 2, "fp32"},
    // One stage holds both ends of the tied embedding, with fewer tokens per step (128) than
    // embedding rows per rank: the lookup's gradient travels as rows gathered over dp, on
    // vocabulary slices with tp, across micro-batches and recomputation; ZB-H1 keeps it dense.
    {"dp2_tp2_ckpt_zero1", 2, 1, 2, 1, "1f1b", true, 2, "fp64", 2000, {kV512}},
    {"dp2_zbh1_zero1", 2, 1, 1, 1, "zb-h1", false, 2, "fp64", 2000, {kV512}},
    {"dp2_pp2_tp2_1f1b_ckpt_zero2_fp32", 2, 2, 2, 2, "1f1b", true, 1, "fp32"},
    // ZeRO stage 3: parameters gathered per layer, with tp, pp, checkpointing, and several
    // micro-batches per dp rank.
    {"dp2_zero3", 2, 1, 1, 3, "1f1b", false, 4},
    {"dp4_zero3", 4, 1, 1, 3, "1f1b", false, 2},
    {"dp2_zero3_m4", 2, 1, 1, 3, "1f1b", false, 1},
    {"dp2_zero3_m4_keep_gathered",
     2,
     1,
     1,
     3,
     "1f1b",
     false,
     1,
     "fp64",
     2000,
     {"parallel.zero3_reshard_after_forward=off"}},
    {"dp2_zero3_m4_no_prefetch",
     2,
     1,
     1,
     3,
     "1f1b",
     false,
     1,
     "fp64",
     2000,
     {"parallel.zero3_prefetch=off", "parallel.zero3_max_live_layers=1"}},
    {"dp2_zero3_m4_shard_all",
     2,
     1,
     1,
     3,
     "1f1b",
     false,
     1,
     "fp64",
     2000,
     {"parallel.zero3_persist_below=0"}},
    {"dp2_tp2_zero3", 2, 1, 2, 3, "1f1b", false, 2},
    {"dp2_pp2_1f1b_ckpt_zero3", 2, 2, 1, 3, "1f1b", true, 1},
    {"dp2_pp2_tp2_1f1b_ckpt_zero3", 2, 2, 2, 3, "1f1b", true, 1},
    {"dp2_pp2_1f1b_zero3", 2, 2, 1, 3, "1f1b", false, 1},
    {"dp2_pp2_tp2_1f1b_ckpt_zero3_keep_gathered",
     2,
     2,
     2,
     3,
     "1f1b",
     true,
     1,
     "fp64",
     2000,
     {"parallel.zero3_reshard_after_forward=off"}},
    {"dp2_pp2_tp2_1f1b_ckpt_zero3_fp32", 2, 2, 2, 3, "1f1b", true, 1, "fp32"},
    // Interleaved 1F1B with two model chunks per stage (pp 4 needs 8 layers), and ZB-H1,
    // whose backward is split into its input and weight halves.
    {"pp2_interleaved_v2", 1, 2, 1, 0, "interleaved-1f1b", false, 2, "fp64", 2000, {kV2}},
    {"pp2_interleaved_v2_ckpt", 1, 2, 1, 0, "interleaved-1f1b", true, 2, "fp64", 2000, {kV2}},
    {"pp4_interleaved_v2", 1, 4, 1, 0, "interleaved-1f1b", false, 1, "fp64", 2000, {kV2, kL8}},
    {"pp4_interleaved_v2_ckpt", 1, 4, 1, 0, "interleaved-1f1b", true, 1, "fp64", 2000, {kV2, kL8}},
    {"dp2_pp2_tp2_interleaved_v2_zero1",
     2,
     2,
     2,
     1,
     "interleaved-1f1b",
     false,
     1,
     "fp64",
     2000,
     {kV2}},
    {"dp2_pp2_tp2_interleaved_v2_ckpt_zero2",
     2,
     2,
     2,
     2,
     "interleaved-1f1b",
     true,
     1,
     "fp64",
     2000,
     {kV2}},
    {"pp2_zbh1", 1, 2, 1, 0, "zb-h1", false, 2},
    {"pp2_zbh1_ckpt", 1, 2, 1, 0, "zb-h1", true, 2},
    {"pp4_zbh1", 1, 4, 1, 0, "zb-h1", false, 1},
    {"dp2_pp2_zbh1_zero2", 2, 2, 1, 2, "zb-h1", false, 1},
    {"dp2_pp2_tp2_zbh1_ckpt_zero1", 2, 2, 2, 1, "zb-h1", true, 1},
};

/// A row with further config switches: "sp" turns on sequence parallelism, "selective"
/// recomputes attention's core in backward.
Layout with(Layout l, const std::vector<std::string>& switches) {
  for (const std::string& s : switches) {
    if (s == "sp") l.sets.push_back("parallel.sequence_parallel=true");
    if (s == "selective") l.sets.push_back("parallel.activation_checkpointing=selective");
  }
  return l;
}

/// Sequence parallelism (norms and the residual stream split over tp by sequence) and
/// selective recomputation, alone and combined with pp, dp, ZeRO 2/3 and full checkpointing.
const Layout kSequenceLayouts[] = {
    with({"sp_tp2_m4", 1, 1, 2, 0, "1f1b", false, 2}, {"sp"}),
    with({"sp_tp4_m4", 1, 1, 4, 0, "1f1b", false, 2}, {"sp"}),
    with({"sp_tp2_m4_fp32", 1, 1, 2, 0, "1f1b", false, 2, "fp32"}, {"sp"}),
    with({"sp_dp2_pp2_tp2_1f1b_ckpt_zero2", 2, 2, 2, 2, "1f1b", true, 1}, {"sp"}),
    with({"sp_dp2_pp2_tp2_gpipe_selective_zero3", 2, 2, 2, 3, "gpipe", false, 1},
         {"sp", "selective"}),
    with({"sp_dp2_tp2_zero2", 2, 1, 2, 2, "1f1b", false, 1, "fp64", 2000, {kV512}}, {"sp"}),
    with({"selective_m4", 1, 1, 1, 0, "1f1b", false, 2}, {"selective"}),
    with({"selective_tp2_pp2_1f1b", 1, 2, 2, 0, "1f1b", false, 2}, {"selective"}),
    // ... and with the interleaved and zero-bubble schedules.
    with({"sp_dp2_pp2_tp2_interleaved_v2_zero1",
          2,
          2,
          2,
          1,
          "interleaved-1f1b",
          false,
          1,
          "fp64",
          2000,
          {kV2}},
         {"sp"}),
    with({"sp_pp2_tp2_zbh1_selective", 1, 2, 2, 0, "zb-h1", false, 2}, {"sp", "selective"}),
};

/// A row for the Llama: 4 heads over 2 kv heads, so tp 4 replicates each kv head on two
/// ranks; `model` "llama" leaves the head untied, "llama_tied" ties it to the embedding.
Layout llama(Layout l, const std::string& model = "llama") {
  l.name = model + "_" + l.name;
  l.model = model;
  return l;
}

const Layout kLlamaLayouts[] = {
    llama({"tp2_m4", 1, 1, 2, 0, "1f1b", false, 2}),
    llama({"tp4_m4", 1, 1, 4, 0, "1f1b", false, 2}),
    llama({"tp4_m4_fp32", 1, 1, 4, 0, "1f1b", false, 2, "fp32"}),
    llama({"pp2_1f1b_ckpt", 1, 2, 1, 0, "1f1b", true, 2}),
    llama({"pp4_1f1b", 1, 4, 1, 0, "1f1b", false, 1}),
    llama({"pp4_1f1b_ckpt", 1, 4, 1, 0, "1f1b", true, 1}),
    llama({"dp2_zero1", 2, 1, 1, 1, "1f1b", false, 2}),
    llama({"dp2_zero2", 2, 1, 1, 2, "1f1b", false, 2}),
    llama({"pp2_tp4_1f1b_ckpt", 1, 2, 4, 0, "1f1b", true, 2}),
    llama({"dp2_pp2_tp2_1f1b_ckpt_zero2", 2, 2, 2, 2, "1f1b", true, 1}),
    llama({"tp2_m4", 1, 1, 2, 0, "1f1b", false, 2}, "llama_tied"),
    llama({"pp2_1f1b_ckpt", 1, 2, 1, 0, "1f1b", true, 2}, "llama_tied"),
    llama({"dp2_pp2_tp2_1f1b_ckpt_zero1", 2, 2, 2, 1, "1f1b", true, 1}, "llama_tied"),
    llama({"dp2_tp2_zero2", 2, 1, 2, 2, "1f1b", false, 1, "fp64", 2000, {kV512}}, "llama_tied"),
    llama({"dp2_zero3", 2, 1, 1, 3, "1f1b", false, 4}),
    llama({"dp2_pp2_tp2_1f1b_ckpt_zero3", 2, 2, 2, 3, "1f1b", true, 1}),
    llama({"dp2_pp2_tp2_1f1b_ckpt_zero3", 2, 2, 2, 3, "1f1b", true, 1}, "llama_tied"),
    llama(with({"sp_tp2_m4", 1, 1, 2, 0, "1f1b", false, 2}, {"sp"})),
    llama(with({"sp_tp4_m4", 1, 1, 4, 0, "1f1b", false, 2}, {"sp"})),
    llama(with({"sp_pp2_tp2_1f1b_selective", 1, 2, 2, 0, "1f1b", false, 2}, {"sp", "selective"})),
    llama({"pp2_interleaved_v2_ckpt", 1, 2, 1, 0, "interleaved-1f1b", true, 2, "fp64", 2000, {kV2}},
          "llama_tied"),
    llama({"pp2_zbh1", 1, 2, 1, 0, "zb-h1", false, 2}, "llama_tied"),
};

const Layout kMoeLayouts[] = {
    moe({"tp2_m4", 1, 1, 2, 0, "1f1b", false, 2}, {"z"}),
    moe({"tp4_top1", 1, 1, 4, 0, "1f1b", false, 2}, {"top1"}),
    moe({"dp2_zero1_top1", 2, 1, 1, 1, "1f1b", false, 2}, {"top1"}),
    moe({"dp2_pp2_tp2_1f1b_zero3", 2, 2, 2, 3, "1f1b", false, 1}, {"top1", "every2"}),
    // Expert parallelism: the experts shared out over ep of the dp ranks.
    moe(ep({"dp2_ep2_zero1", 2, 1, 1, 1, "1f1b", false, 2}, 2), {"z"}),
    moe(ep({"dp4_ep4_zero2_shared_sigmoid", 4, 1, 1, 2, "1f1b", false, 1}, 4),
        {"shared", "sigmoid"}),
    moe(ep({"dp2_ep2_tp2_zero2_capacity", 2, 1, 2, 2, "1f1b", false, 1}, 2), {"capacity"}),
    moe(ep({"dp2_ep2_pp2_1f1b_every2_sigmoid", 2, 2, 1, 0, "1f1b", false, 1}, 2),
        {"every2", "top1", "sigmoid"}),
    moe(ep({"dp2_ep2_pp2_zbh1_ckpt", 2, 2, 1, 0, "zb-h1", true, 1}, 2), {"z"}),
    moe(ep({"dp4_ep2_pp2_1f1b_ckpt_zero2", 4, 2, 1, 2, "1f1b", true, 1}, 2), {"z", "shared"}),
    moe(ep({"dp4_ep2_pp2_1f1b_zero3", 4, 2, 1, 3, "1f1b", false, 1}, 2), {"top1", "every2"}),
    moe(ep({"dp2_ep2_pp2_tp2_1f1b_ckpt_zero2", 2, 2, 2, 2, "1f1b", true, 1}, 2), {"z"}),
    // Sequence parallelism: the MoE layer gathers the sequence and gives back the slice.
    moe(with({"sp_tp2_shared", 1, 1, 2, 0, "1f1b", false, 2}, {"sp"}), {"shared", "z"}),
    moe(ep(with({"sp_dp2_ep2_tp2_zero3_capacity", 2, 1, 2, 3, "1f1b", false, 1}, {"sp"}), 2),
        {"capacity", "top1"}),
};

/// Context parallelism: each sequence cut into 2 cp chunks, attention around the ring, alone
/// and with tp (and sequence parallelism), pp under each schedule, dp with ZeRO 1-3,
/// recomputation, the Llama's grouped kv heads and RoPE, and a loss that leaves out the
/// predictions after each document's end (counted differently on each cp rank).
const Layout kContextLayouts[] = {
    cp({"cp2_m4", 1, 1, 1, 0, "1f1b", false, 2}, 2),
    cp({"cp4_m4", 1, 1, 1, 0, "1f1b", false, 2}, 4),
    cp(with({"sp_cp2_tp2", 1, 1, 2, 0, "1f1b", false, 2}, {"sp"}), 2),
    cp({"cp2_pp2_1f1b", 1, 2, 1, 0, "1f1b", false, 2}, 2),
    cp({"cp2_pp2_gpipe_ckpt", 1, 2, 1, 0, "gpipe", true, 2}, 2),
    cp({"cp2_pp2_zbh1", 1, 2, 1, 0, "zb-h1", false, 2}, 2),
    cp({"cp2_pp2_interleaved_v2", 1, 2, 1, 0, "interleaved-1f1b", false, 2, "fp64", 2000, {kV2}},
       2),
    cp({"dp2_cp2_zero1", 2, 1, 1, 1, "1f1b", false, 2}, 2),
    cp({"dp2_cp2_tp2_zero2", 2, 1, 2, 2, "1f1b", false, 1}, 2),
    cp(with({"sp_dp2_cp2_tp2_zero3_selective", 2, 1, 2, 3, "1f1b", false, 1}, {"sp", "selective"}),
       2),
    cp({"dp2_cp2_pp2_1f1b_ckpt_zero3", 2, 2, 1, 3, "1f1b", true, 1}, 2),
    documents(cp({"cp2_m4", 1, 1, 1, 0, "1f1b", false, 2}, 2)),
    documents(cp({"dp2_cp2_zero2", 2, 1, 1, 2, "1f1b", false, 2}, 2)),
    // A mixture of two token files read in epochs, validated per source.
    mixture({"dp2_zero1", 2, 1, 1, 1, "1f1b", false, 2}),
    mixture(
        {"pp2_interleaved_v2_tp2", 1, 2, 2, 0, "interleaved-1f1b", false, 1, "fp64", 2000, {kV2}}),
    mixture({"dp2_pp2_tp2_1f1b_ckpt_zero3", 2, 2, 2, 3, "1f1b", true, 1}),
    mixture(cp({"dp2_cp2_zero2", 2, 1, 1, 2, "1f1b", false, 2}, 2)),
    llama(cp({"cp2_m4", 1, 1, 1, 0, "1f1b", false, 2}, 2)),
    llama(cp({"cp4_m4", 1, 1, 1, 0, "1f1b", false, 2}, 4), "llama_tied"),
    llama(cp(with({"sp_cp2_tp2_zero2", 1, 1, 2, 2, "1f1b", false, 2}, {"sp"}), 2)),
    llama(cp({"dp2_cp2_pp2_1f1b_zero3", 2, 2, 1, 3, "1f1b", false, 1}, 2)),
    llama(documents(cp({"cp2_pp2_1f1b", 1, 2, 1, 0, "1f1b", false, 2}, 2))),
    // Mixture-of-Experts (dropless): each sequence's choices counted over its cp ranks for
    // the balancing loss; the experts' ranks fold into the cp ranks.
    moe(cp({"cp2_m4", 1, 1, 1, 0, "1f1b", false, 2}, 2), {"z"}),
    moe(ep(cp({"cp2_ep2_zero1", 1, 1, 1, 1, "1f1b", false, 2}, 2), 2), {"shared"}),
    moe(cp({"cp2_pp2_1f1b_every2", 1, 2, 1, 0, "1f1b", false, 2}, 2), {"every2", "top1"}),
    moe(ep(cp(with({"sp_dp2_cp2_ep4_tp2_zero2", 2, 1, 2, 2, "1f1b", false, 1}, {"sp"}), 2), 4),
        {"sigmoid", "z"}),
};

/// Muon: each matrix orthogonalised whole on one owner of its stage, gathered from tp
/// shards (GPT-2's fused QKV as three matrices, the Llama's kv heads replicated over tp 4)
/// and ZeRO's ranges, under every stage, pipeline schedule, cp and ep with experts.
const Layout kMuonLayouts[] = {
    muon({"tp4_m4", 1, 1, 4, 0, "1f1b", false, 2}),
    muon({"dp2_zero0", 2, 1, 1, 0, "1f1b", false, 2}),
    muon({"dp2_zero1", 2, 1, 1, 1, "1f1b", false, 2}, /*spectral=*/true),
    muon({"dp2_zero2_fp32", 2, 1, 1, 2, "1f1b", false, 2, "fp32"}),
    muon({"dp4_zero3", 4, 1, 1, 3, "1f1b", false, 2}),
    muon({"pp2_1f1b", 1, 2, 1, 0, "1f1b", false, 2}),
    muon({"pp2_interleaved_v2", 1, 2, 1, 0, "interleaved-1f1b", false, 2, "fp64", 2000, {kV2}}),
    muon({"pp2_zbh1", 1, 2, 1, 0, "zb-h1", false, 2}),
    muon(cp({"dp2_cp2_zero2", 2, 1, 1, 2, "1f1b", false, 2}, 2)),
    muon({"dp2_pp2_tp2_1f1b_ckpt_zero3", 2, 2, 2, 3, "1f1b", true, 1}),
    // Rounds: an 8 MiB buffer takes one layer's four matrices (fp64, hidden 256) at a time,
    // one on each owner.
    muon({"dp4_zero2_rounds",
          4,
          1,
          1,
          2,
          "1f1b",
          false,
          2,
          "fp64",
          2000,
          {"optimizer.muon_exchange_mib=8", "model.hidden=256"}}),
    muon(llama({"tp4_m4", 1, 1, 4, 0, "1f1b", false, 2})),
    muon(moe(ep({"dp2_ep2_tp2_zero2", 2, 1, 2, 2, "1f1b", false, 1}, 2), {"z"})),
    muon(moe(ep({"dp4_ep2_zero3", 4, 1, 1, 3, "1f1b", false, 1}, 2), {"top1"})),
};

/// Every row of the tables.
std::vector<Layout> all_layouts() {
  std::vector<Layout> all(std::begin(kLayouts), std::end(kLayouts));
  all.insert(all.end(), std::begin(kSequenceLayouts), std::end(kSequenceLayouts));
  all.insert(all.end(), std::begin(kLlamaLayouts), std::end(kLlamaLayouts));
  all.insert(all.end(), std::begin(kMoeLayouts), std::end(kMoeLayouts));
  all.insert(all.end(), std::begin(kContextLayouts), std::end(kContextLayouts));
  all.insert(all.end(), std::begin(kMuonLayouts), std::end(kMuonLayouts));
  return all;
}

class Parity : public ::testing::TestWithParam<Layout> {};

TEST_P(Parity, matches_the_single_process_run) {
  const Layout& layout = GetParam();
  const double tolerance = layout.precision == "fp64" ? 1e-10 : 1e-5;

  const TrainConfig config = layout_config(layout, kSteps);
  ParallelContext ctx(MPI_COMM_WORLD, layout.dp, layout.pp, layout.tp, 120.0, layout.ep, layout.cp);
  Trainer trainer(config, ctx);
  const RunTrace got = train_steps(trainer, kSteps);

  Layout single{"single", 1, 1, 1, 0, "1f1b", false, 2, layout.precision};
  single.model = layout.model;
  // The same model, data and optimizer: the layout's model.*, data.* and optimizer.*
  // overrides (a deeper model for pp 4 x 2 chunks, a token file of documents, Muon).
  for (const std::string& set : layout.sets)
    if (set.rfind("model.", 0) == 0 || set.rfind("data.", 0) == 0 ||
        set.rfind("optimizer.", 0) == 0)
      single.sets.push_back(set);
  ParallelContext solo(MPI_COMM_SELF, 1, 1, 1, 120.0);
  Trainer reference(layout_config(single, kSteps), solo);
  const RunTrace want = train_steps(reference, kSteps);

  for (int s = 0; s < kSteps; ++s) {
    EXPECT_LE(relative_difference(got.losses[s], want.losses[s]), tolerance)
        << "step " << s + 1 << ": loss " << got.losses[s] << " vs " << want.losses[s];
    EXPECT_LE(relative_difference(got.grad_norms[s], want.grad_norms[s]), tolerance)
        << "step " << s + 1 << ": grad norm " << got.grad_norms[s] << " vs " << want.grad_norms[s];
  }
  // Training moved: the loss fell from its value at initialisation.
  EXPECT_LT(want.losses.back(), want.losses.front());
  // Validation: the same loss over the same windows, per source too.
  const ValidationResult got_val = trainer.validate(), want_val = reference.validate();
  EXPECT_GT(want_val.tokens, 0);
  EXPECT_EQ(got_val.tokens, want_val.tokens);
  EXPECT_LE(relative_difference(got_val.loss, want_val.loss), tolerance)
      << "val_loss " << got_val.loss << " vs " << want_val.loss;
  ASSERT_EQ(got_val.loss_by_source.size(), want_val.loss_by_source.size());
  for (size_t k = 0; k < want_val.loss_by_source.size(); ++k)
    EXPECT_LE(relative_difference(got_val.loss_by_source[k], want_val.loss_by_source[k]), tolerance)
        << "source " << k;
  const bool fp64 = layout.precision == "fp64";
  const double weights = max_weight_difference(
      trainer, ctx, reference, fp64 ? WeightMetric::kMaxElement : WeightMetric::kNorm);
  EXPECT_LE(weights, tolerance);
  std::printf("%s: final weights differ by %.3g (%s)\n", layout.name.c_str(), weights,
              fp64 ? "max element" : "tensor norm");
}

INSTANTIATE_TEST_SUITE_P(Layouts, Parity, ::testing::ValuesIn(all_layouts()),
                         [](const auto& info) { return info.param.name; });

/// The ctest entries: one per rank count, precision and model family, named
/// parity_np<ranks>_<precision>[_llama]; one mpirun runs all of the family's layouts.
std::vector<MpiCase> parity_cases() {
  std::map<std::string, std::pair<int, std::vector<std::string>>> families;  // name -> ranks, tests
  for (const Layout& l : all_layouts()) {
    const std::string family = "parity_np" + std::to_string(l.world()) + "_" + l.precision +
                               (l.model == "gpt2" ? "" : "_llama");
    families[family].first = l.world();
    families[family].second.push_back("Layouts/Parity.matches_the_single_process_run/" + l.name);
  }
  std::vector<MpiCase> cases;
  for (const auto& [name, family] : families)
    cases.push_back(grouped_case(name, family.first, family.second));
  return cases;
}
const bool kRegistered = register_mpi_cases(parity_cases());

}  // namespace
}  // namespace trident::testing
