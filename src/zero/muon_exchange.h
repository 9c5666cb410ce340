// MuonExchange: brings each Muon matrix whole to one owner among its pipeline stage's
// ranks, orthogonalises it there once, and hands every rank the result. tp cuts matrices
// by rows or columns and ZeRO by element ranges; Newton-Schulz needs them whole.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor, at::TensorOptions

#include <cstdint>  // int64_t
#include <string>
#include <vector>

#include "tensor_parallel/parameter.h"  // Parameter
#include "zero/muon.h"                  // MuonOptions

namespace trident {
class Communicator;

/// Owners for jobs of `cost` over `ranks` ranks, longest first to the least loaded (lowest
/// rank on ties): the same answer on every rank.
std::vector<int> assign_owners(const std::vector<double>& cost, int ranks);

class MuonExchange {
 public:
  /// `held`: this rank's Muon parameters (indices into `params`). Collective over `stage`
  /// (ParallelContext::stage): its ranks agree on the stage's matrices, experts of other ep
  /// ranks included, and share them out as owners by Newton-Schulz's cost.
  MuonExchange(const std::vector<Parameter>& params, std::vector<size_t> held, Communicator& stage,
               const MuonOptions& options, at::TensorOptions state_options);

  /// Zeroes every rank's contributions: call before filling slot()s.
  void begin();
  /// held[k]'s place in the exchange, in the parameter's global shape: before run(), what
  /// this rank contributes (its part of the update, zeros elsewhere); after, the whole
  /// orthogonalised and scaled update.
  at::Tensor slot(size_t k);
  /// Sums the contributions on each matrix's owner (a reduce-scatter over the stage: every
  /// element has one contributor, so the sum is exact), runs Newton-Schulz there once per
  /// logical matrix, and all-gathers the results. Collective over the stage.
  void run();

  /// Bytes of the exchange's buffers.
  int64_t bytes() const;
  /// Owners' Newton-Schulz work: the busiest rank's over the mean (1 = even).
  double imbalance() const { return imbalance_; }

 private:
  struct Matrix {
    std::string name;
    std::vector<int64_t> shape;  // global
    ParamSpec spec;              // name, shape and fused chunks: what logical_matrices reads
    int owner = 0;
    int64_t offset = 0;  // into the owner's block
  };

  Communicator& stage_;
  MuonOptions options_;
  std::vector<Matrix> matrices_;  // every matrix of the stage, in one order on every rank
  std::vector<size_t> held_to_matrix_;
  int64_t block_ = 0;  // elements of each owner's block (the largest owner's)
  at::Tensor buffer_;  // stage size x block: contributions, then results
  at::Tensor owned_;   // block: this rank's matrices, summed
  double imbalance_ = 1;
};

}  // namespace trident
