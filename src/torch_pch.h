// Precompiled header for the libtorch-based targets: the heavy headers, parsed once.
#pragma once
#include <ATen/ATen.h>
#if TRIDENT_HAVE_MPI
#include <mpi.h>
#endif
#include <torch/autograd.h>
#include <torch/nn/module.h>
#include <torch/types.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>
