// The state every model stage shares.
#include "models/model_stage.h"

#include "parallel/communicator.h"  // Communicator::rank, size

namespace trident {

ModelStage::ModelStage(const StageDims& dims, uint64_t seed, Communicator& tp, int stage,
                       int stages)
    : tp_(tp),
      stage_(stage),
      stages_(stages),
      params_(seed, tp.rank(), tp.size(), dims.dtype, dims.device),
      dims_(dims) {}

}  // namespace trident
