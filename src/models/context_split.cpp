// Context parallelism's cut of a sequence into balanced chunks.
#include "models/context_split.h"

#include <ATen/ATen.h>

#include "parallel/communicator.h"

namespace trident {

int context_size(const Communicator* cp) { return cp ? cp->size() : 1; }
int context_rank(const Communicator* cp) { return cp ? cp->rank() : 0; }

at::Tensor context_positions(int64_t seq_len, int rank, int cp, at::Device device) {
  const at::TensorOptions opts = at::TensorOptions().dtype(at::kLong).device(device);
  if (cp == 1) return at::arange(seq_len, opts);
  const int64_t chunk = seq_len / (2 * cp);
  const int64_t late = 2 * cp - 1 - rank;
  return at::cat({at::arange(rank * chunk, (rank + 1) * chunk, opts),
                  at::arange(late * chunk, (late + 1) * chunk, opts)});
}

at::Tensor take_context_slice(const at::Tensor& x, int64_t dim, int rank, int cp) {
  if (cp == 1) return x;
  return x.index_select(dim, context_positions(x.size(dim), rank, cp, x.device()));
}

}  // namespace trident
