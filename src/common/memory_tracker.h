// Live CPU bytes allocated through libtorch, counted by a wrapper around its CPU
// allocator, so that the activation memory a pipeline stage holds can be measured.
#pragma once
#include <cstdint>

namespace trident {

/// Installs the counting allocator (once per process; later calls do nothing). The
/// allocator is process-wide in libtorch, so this is the one global the project keeps.
/// Tensors of kMappedBlockBytes or more get mappings of their own, kept or released when
/// freed as releases_large_blocks() says (common/host_memory.h); the rest libtorch's own
/// memory, glibc's heap.
void install_memory_tracker();
/// Bytes currently allocated by tensors made after installation.
int64_t live_tensor_bytes();
/// The highest live_tensor_bytes() since installation or the last reset.
int64_t peak_tensor_bytes();
/// Starts a new peak at the bytes live now (to measure one phase, such as a save).
void reset_peak_tensor_bytes();

}  // namespace trident
