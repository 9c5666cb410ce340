// What the nvme tier's unit tests share: a scratch directory, and the AsyncIo backends this
// build can run.
#pragma once
#include <stdlib.h>  // mkdtemp

#include <filesystem>  // std::filesystem::remove_all
#include <string>
#include <vector>

#include "common/async_io.h"  // IoBackend, io_uring_built

namespace trident {

/// A fresh directory under /tmp, removed with everything in it at the end.
struct TempDir {
  std::string path;
  TempDir() {
    char name[] = "/tmp/trident_tier_test_XXXXXX";
    path = mkdtemp(name);
  }
  ~TempDir() { std::filesystem::remove_all(path); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

/// The backends worth testing: threads, and io_uring where it was built.
inline std::vector<IoBackend> built_backends() {
  std::vector<IoBackend> all = {IoBackend::kThreads};
  if (io_uring_built()) all.push_back(IoBackend::kUring);
  return all;
}

}  // namespace trident
