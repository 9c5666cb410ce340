// nccl_backend.h in a build without the CUDA toolkit and NCCL.
#include <stdexcept>  // std::runtime_error

#include "parallel/nccl_backend.h"

namespace trident {

bool nccl_built() { return false; }

std::string gpu_identity(int device) { return std::to_string(device); }

std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> /*group*/,
                                                     int /*device*/, double /*timeout_s*/,
                                                     bool /*ring_channels*/) {
  throw std::runtime_error(
      "this trident was built without NCCL (no CUDA toolkit was found): build with "
      "scripts/build.sh --cuda on a GPU node (docs/gpu.md)");
}

}  // namespace trident
