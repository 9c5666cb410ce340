// Making a group's NCCL communicator, for callers that must not depend on whether this
// build has NCCL (nccl_communicator.cpp where it has, nccl_absent.cpp where not).
#pragma once
#include <memory>  // std::unique_ptr
#include <string>  // std::string

#include "parallel/communicator.h"

namespace trident {

/// Whether this build has the NCCL communicator.
bool nccl_built();

/// What names CUDA device `device` uniquely on its host: its PCI bus id where the CUDA
/// runtime is built in, else the index.
std::string gpu_identity(int device);

/// The NCCL communicator of `group`'s ranks on CUDA device `device`, with `group` kept for
/// byte strings, split() and host tensors; with `ring_channels`, point-to-point messages
/// between ring neighbours get channels of their own (NcclCommunicator::open_ring_channels).
/// Collective over the group. Throws, naming the fix, when this build has no NCCL or no
/// GPU is visible.
std::unique_ptr<Communicator> make_nccl_communicator(std::unique_ptr<Communicator> group,
                                                     int device, double timeout_s,
                                                     bool ring_channels = false);

}  // namespace trident
