// The NCCL communicator where the machine cannot run it: a build without NCCL, or (as on
// CI, where NCCL and the CUDA toolkit are present but no GPU is) a node without a visible
// GPU, refuses to make one with a message that names what is missing and the way out. On a
// GPU node it starts, over a group of one (NCCL takes one rank per GPU). A build that was
// meant to have NCCL (TRIDENT_EXPECT_NCCL, decided in the top CMakeLists.txt) and built
// the stub fails here: "built without NCCL" is right only where no NCCL was there to find.
#include <ATen/detail/CUDAHooksInterface.h>  // at::detail::getCUDAHooks
#include <gtest/gtest.h>

#include <functional>  // std::function
#include <string>      // std::string

#include "models/model_config.h"    // check_device
#include "mpi_cases.h"              // register_mpi_cases
#include "parallel/nccl_backend.h"  // make_nccl_communicator, nccl_built
#include "parallel/world.h"         // self_communicator

namespace trident {
namespace {

const bool kRegistered = testing::register_mpi_cases({
    {"nccl_backend_and_device_check_1rank", 1, "NcclBackend.*"},
});

std::string error_of(const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

bool gpu_visible() { return at::detail::getCUDAHooks().getNumGPUs() > 0; }

TEST(NcclBackend, is_built_where_the_build_expected_it) {
#if TRIDENT_EXPECT_NCCL
  EXPECT_TRUE(nccl_built())
      << "CMake expected the NCCL communicator here (TRIDENT_CUDA=ON, or NCCL under "
         "/usr/local/cuda) but built without it: see its 'trident: ... NCCL communicator' "
         "line, or configure with -DTRIDENT_EXPECT_NCCL=OFF";
#else
  SUCCEED() << "this build was not meant to have NCCL";
#endif
}

TEST(NcclBackend, starts_only_where_a_gpu_is_visible) {
  const std::string error =
      error_of([] { make_nccl_communicator(self_communicator(10.0), 0, 10.0); });
  if (!nccl_built()) {
    EXPECT_NE(error.find("built without NCCL"), std::string::npos) << error;
  } else if (!gpu_visible()) {
    EXPECT_NE(error.find("no GPU is visible"), std::string::npos) << error;
    EXPECT_NE(error.find("train.device = \"cpu\""), std::string::npos) << error;
  } else {
    EXPECT_EQ(error, "");
  }
}

TEST(NcclBackend, cuda_device_check_names_the_key_and_the_fix) {
  EXPECT_EQ(error_of([] { check_device(Device::kCpu); }), "");
  const std::string error = error_of([] { check_device(Device::kCuda); });
  EXPECT_NE(error.find("train.device = \"cuda\""), std::string::npos) << error;
  EXPECT_NE(error.find("train.device = \"cpu\""), std::string::npos) << error;
}

}  // namespace
}  // namespace trident
