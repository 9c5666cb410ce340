// cuda_streams.h on a CUDA build of libtorch: its current stream and caching allocator.
#include <c10/cuda/CUDACachingAllocator.h>  // recordStream
#include <c10/cuda/CUDAStream.h>            // getCurrentCUDAStream

#include "parallel/cuda_streams.h"

namespace trident::cuda {

bool libtorch_has_cuda() { return true; }

cudaStream_t current_stream(int device) {
  return c10::cuda::getCurrentCUDAStream(static_cast<c10::DeviceIndex>(device)).stream();
}

void record_stream(const at::Tensor& tensor, cudaStream_t stream) {
  const int device = tensor.device().index();
  c10::cuda::CUDACachingAllocator::recordStream(
      tensor.storage().data_ptr(),
      c10::cuda::getStreamFromExternal(stream, static_cast<c10::DeviceIndex>(device)));
}

}  // namespace trident::cuda
