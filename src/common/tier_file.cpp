// TierFile: open, probe O_DIRECT with one aligned write, size, unlink.
#include "common/tier_file.h"

#include <fcntl.h>   // open, O_DIRECT, fallocate
#include <unistd.h>  // pwrite, ftruncate, unlink, close

#include <cerrno>     // errno
#include <cstring>    // std::strerror, std::memset
#include <stdexcept>  // std::runtime_error

#include "common/aligned_buffer.h"  // AlignedBuffer, kIoAlignment

namespace trident {
namespace {

std::runtime_error tier_error(const std::string& path, const std::string& what) {
  return std::runtime_error("nvme tier: " + what + " " + path + ": " + std::strerror(errno) +
                            "; check parallel.nvme_path (an existing, writable directory on "
                            "a local disk with room for the optimizer's shard)");
}

}  // namespace

TierFile::TierFile(const std::string& path, off_t bytes) {
  const int flags = O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC;
  fd_ = open(path.c_str(), flags | O_DIRECT, 0600);
  direct_ = fd_ >= 0;
  if (fd_ >= 0) {
    // Some filesystems accept the flag at open and refuse the transfers (EINVAL).
    AlignedBuffer probe(kIoAlignment);
    std::memset(probe.data(), 0, probe.size());
    if (pwrite(fd_, probe.data(), probe.size(), 0) != static_cast<ssize_t>(probe.size())) {
      close(fd_);
      fd_ = -1;
      direct_ = false;
    }
  }
  if (fd_ < 0) fd_ = open(path.c_str(), flags, 0600);
  if (fd_ < 0) throw tier_error(path, "cannot create");
  // Reserve the blocks now, so that a full disk fails here rather than mid-step. Where the
  // filesystem cannot reserve (no fallocate), the file is sized sparse and a full disk
  // shows in the transfers instead.
  const int reserve = posix_fallocate(fd_, 0, bytes);
  const bool no_room = reserve == ENOSPC || reserve == EDQUOT || reserve == EFBIG;
  if (no_room || (reserve != 0 && ftruncate(fd_, bytes) != 0)) {
    if (no_room) errno = reserve;
    const std::runtime_error error =
        tier_error(path, "cannot reserve " + std::to_string(bytes) + " bytes for");
    close(fd_);
    unlink(path.c_str());
    throw error;
  }
  unlink(path.c_str());
}

TierFile::~TierFile() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace trident
