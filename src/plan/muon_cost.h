// What Muon (optimizer.name = "muon") costs a pipeline stage: its matrices whole, the
// momentum it keeps instead of AdamW's two moments, Newton-Schulz's FLOPs spread over the
// stage's owners, and the exchange that brings each matrix whole to its owner and back
// (docs/optimizers.md).
#pragma once
#include <cstdint>  // int64_t
#include <vector>

#include "plan/plan_model.h"  // PlanModel, Layout

namespace trident::plan {

/// A matrix Muon orthogonalises: rows x cols, whole (GPT-2's fused QKV counts as three).
struct MuonMatrix {
  int64_t rows = 0, cols = 0;
};

/// Muon's matrices of pipeline stage `stage`: every matrix of its layers, whole, the routed
/// experts of all ep ranks included (the stage's ranks share the work), and the elements of
/// them one rank holds (its tp shard, its ep share of the experts).
struct MuonStage {
  std::vector<MuonMatrix> matrices;
  double whole = 0;         ///< elements of the stage's matrices, whole
  double rank_dense = 0;    ///< one rank's elements of the non-expert matrices (a tp shard)
  double rank_experts = 0;  ///< one rank's elements of its routed experts' matrices
};
MuonStage muon_stage(const PlanModel& m, int pp, int tp, int ep, int stage);

/// Newton-Schulz's FLOPs on one A x B matrix (A <= B after transposing): 4 A^2 B + 2 A^3
/// an iteration.
double newton_schulz_flops(const MuonMatrix& x, int64_t steps);

/// Bytes of optimizer state one rank saves with Muon against AdamW on stage `stage`: one
/// moment of each matrix element it holds (sharded over dp x cp, or expert-dp, from ZeRO 1).
double muon_state_saving(const PlanModel& m, const Layout& l, int stage);

/// Bytes of the exchange buffer a rank holds: its stage's matrices over the stage's ranks,
/// plus its own block, at most optimizer.muon_exchange_mib (or one matrix a rank).
double muon_exchange_bytes(const PlanModel& m, const Layout& l, int stage);

}  // namespace trident::plan
