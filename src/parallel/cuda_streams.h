// The two things the NCCL backend needs from libtorch's CUDA runtime: the stream the caller
// computes on, and telling the caching allocator that a stream still uses a tensor. Kept
// behind this header so that only cuda_streams_torch.cpp needs a CUDA build of libtorch.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor
#include <cuda_runtime_api.h>  // cudaStream_t

namespace trident::cuda {

/// Whether this build's libtorch can make CUDA tensors at all.
bool libtorch_has_cuda();

/// The stream that libtorch's kernels on `device` are queued on now.
cudaStream_t current_stream(int device);

/// Keeps `tensor`'s memory from being reused before the work queued on `stream` so far has
/// run (the caching allocator frees by stream).
void record_stream(const at::Tensor& tensor, cudaStream_t stream);

}  // namespace trident::cuda
