// cuda_streams.h where libtorch has no CUDA (Debian's CPU build, with the CUDA toolkit
// beside it): no tensor can live on a GPU, so there is no libtorch stream to follow and no
// allocator to tell. The NCCL backend still compiles and links, and refuses CPU tensors.
#include "parallel/cuda_streams.h"

namespace trident::cuda {

bool libtorch_has_cuda() { return false; }

cudaStream_t current_stream(int /*device*/) { return cudaStreamLegacy; }

void record_stream(const at::Tensor& /*tensor*/, cudaStream_t /*stream*/) {}

}  // namespace trident::cuda
