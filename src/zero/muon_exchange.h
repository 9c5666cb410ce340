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
  /// ranks included, cut them into rounds whose exchange buffer holds at most
  /// `round_elements` (or one matrix per rank), and share each round's matrices out as
  /// owners by Newton-Schulz's cost.
  MuonExchange(const std::vector<Parameter>& params, std::vector<size_t> held, Communicator& stage,
               const MuonOptions& options, at::TensorOptions state_options, int64_t round_elements);

  int rounds() const { return static_cast<int>(round_blocks_.size()); }
  /// The round held[k] is exchanged in.
  int round_of(size_t k) const;
  /// Zeroes every rank's contributions to `round`: call before filling its slot()s.
  void begin(int round);
  /// held[k]'s place in the exchange of its round, in the parameter's global shape: before
  /// run(), what this rank contributes (its part of the update, zeros elsewhere); after, the
  /// whole orthogonalised and scaled update. Valid until the next round begins.
  at::Tensor slot(size_t k);
  /// Sums the contributions on each matrix's owner (a reduce-scatter over the stage: every
  /// element has one contributor, so the sum is exact), runs Newton-Schulz there once per
  /// logical matrix, and all-gathers the results. Collective over the stage.
  void run(int round);

  /// Bytes of the exchange's buffers.
  int64_t bytes() const;
  /// "8 matrices (9 orthogonalised) on 4 ranks in 1 round, ...": for the run's header.
  std::string description() const;
  /// Owners' Newton-Schulz work: the busiest rank's over the mean (1 = even).
  double imbalance() const { return imbalance_; }

 private:
  struct Matrix {
    std::string name;
    std::vector<int64_t> shape;  // global
    ParamSpec spec;              // name, shape and fused chunks: what logical_matrices reads
    double cost = 0;             // Newton-Schulz's work
    int round = 0;
    int owner = 0;
    int64_t offset = 0;  // into the owner's block of its round
  };
  /// Owners and offsets of matrices [first, last) as one round; returns its block.
  int64_t place_round(size_t first, size_t last, int round, std::vector<double>& load);

  Communicator& stage_;
  MuonOptions options_;
  std::vector<Matrix> matrices_;  // every matrix of the stage, in one order on every rank
  std::vector<size_t> held_to_matrix_;
  std::vector<int64_t> round_blocks_;  // per round: elements of each owner's block
  at::Tensor buffer_;  // stage size x the largest block: contributions, then results
  at::Tensor owned_;   // block: this rank's matrices, summed
  double imbalance_ = 1;
};

}  // namespace trident
