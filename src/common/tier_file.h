// A scratch file of the nvme tier: opened with O_DIRECT where the filesystem accepts it
// (tmpfs and some overlayfs refuse it), unnamed or unlinked at once so that no crash leaves
// it behind, and never a file another process opened.
#pragma once
#include <sys/types.h>  // off_t

#include <string>

namespace trident {

class TierFile {
 public:
  /// Creates a file of this process's own in the directory of `path` (which must exist),
  /// sized to `bytes`: unnamed (O_TMPFILE), or `path` with a unique suffix, unlinked at once;
  /// the open descriptor keeps it alive until this object closes it. Messages name `path`.
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
