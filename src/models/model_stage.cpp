// The state every model stage shares.
#include "models/model_stage.h"

#include <c10/util/Exception.h>  // TORCH_CHECK

#include "parallel/communicator.h"  // Communicator::rank, size

namespace trident {

ModelStage::ModelStage(const StageDims& dims, uint64_t seed, Communicator& tp, int stage,
                       int stages)
    : tp_(tp),
      stage_(stage),
      stages_(stages),
      params_(seed, tp.rank(), tp.size(), dims.dtype, dims.device),
      dims_(dims) {}

at::Tensor ModelStage::decode(const at::Tensor& ids, KvCache& cache) {
  (void)ids;
  (void)cache;
  TORCH_CHECK(false, "this model stage cannot decode (a model of virtual pipeline stages)");
}

void ModelStage::check_decodable() const {
  TORCH_CHECK(is_first() && is_last(), "decode needs the whole model on one stage (pp = 1)");
  TORCH_CHECK(dims_.sequence_shards == 1 && dims_.context_shards == 1,
              "decode needs whole sequences: no sequence or context parallelism");
}

}  // namespace trident
