// Muon's arithmetic: which parameters it updates, the quintic Newton-Schulz iteration that
// orthogonalises a matrix, and the scale of an update to its matrix's shape. No
// communication: zero/muon_exchange.h brings each matrix whole to one rank.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <cstdint>  // int64_t
#include <vector>

#include "tensor_parallel/parameter.h"  // ParamSpec

namespace trident {

/// optimizer.name = "muon" and its keys (docs/optimizers.md).
struct MuonOptions {
  bool enabled = false;
  double momentum = 0.95;
  bool nesterov = true;
  int ns_steps = 5;
  bool spectral = false;  ///< sqrt(max(1, A/B)) instead of Moonlight's 0.2 sqrt(max(A, B))
  double lr_ratio = 1.0;  ///< the matrices' learning rate over optimizer.lr (muon_lr / lr)
  /// Bytes of each rank's exchange buffer: matrices are orthogonalised in rounds that fit.
  int64_t exchange_bytes = int64_t{256} << 20;
};

/// Whether Muon updates `spec`: a 2-D matrix of a transformer block ("h.<i>.…": attention's
/// projections, the MLP's and every expert's matrices), not the router. Embeddings, the
/// head, norms and biases stay with AdamW.
bool is_muon_matrix(const ParamSpec& spec);

/// The logical matrices of a Muon parameter, each orthogonalised on its own: a fused
/// parameter (GPT-2's QKV) is `fused_chunks` blocks along its split dimension; any other is
/// one matrix. Returned as views of `global` (the parameter's global shape).
std::vector<at::Tensor> logical_matrices(const ParamSpec& spec, const at::Tensor& global);

/// Newton-Schulz's quintic iteration (coefficients 3.4445, -4.7750, 2.0315) run `steps`
/// times on `g` divided by its Frobenius norm (+1e-7), on its wide orientation: an
/// approximately orthogonal matrix of g's shape, in g's dtype (float32 or float64).
at::Tensor newton_schulz(const at::Tensor& g, int steps);

/// The factor of an orthogonalised update of a `rows` x `cols` matrix.
double muon_scale(int64_t rows, int64_t cols, bool spectral);

}  // namespace trident
