// A scratch file of the nvme tier: opened with O_DIRECT where the filesystem accepts it
// (tmpfs and some overlayfs refuse it), unlinked at once so that no crash leaves it behind.
#pragma once
#include <sys/types.h>  // off_t

#include <string>

namespace trident {

class TierFile {
 public:
  /// Creates `path` (its directory must exist), sized to `bytes`, and unlinks it: the
  /// open descriptor keeps it alive until this object closes it.
  TierFile(const std::string& path, off_t bytes);
  ~TierFile();
  TierFile(const TierFile&) = delete;
  TierFile& operator=(const TierFile&) = delete;

  int fd() const { return fd_; }
  /// Whether transfers bypass the page cache (O_DIRECT); else they go through it.
  bool direct() const { return direct_; }

 private:
  int fd_ = -1;
  bool direct_ = false;
};

}  // namespace trident
