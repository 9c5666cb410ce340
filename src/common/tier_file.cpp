// TierFile: open an unnamed file (or one of a name no other process uses), probe O_DIRECT
// with one aligned write, size, unlink.
#include "common/tier_file.h"

#include <fcntl.h>   // open, O_DIRECT, fallocate
#include <unistd.h>  // pwrite, ftruncate, unlink, close

#include <cerrno>      // errno
#include <cstring>     // std::strerror, std::memset
#include <filesystem>  // std::filesystem::path
#include <random>      // std::random_device
#include <stdexcept>   // std::runtime_error

#include "common/aligned_buffer.h"  // AlignedBuffer, kIoAlignment

namespace trident {
namespace {

std::runtime_error tier_error(const std::string& path, const std::string& what) {
  return std::runtime_error("nvme tier: " + what + " " + path + ": " + std::strerror(errno) +
                            "; check parallel.nvme_path (an existing, writable directory on "
                            "a local disk with room for the optimizer's shard)");
}

/// Whether the transfers of `fd` (opened with O_DIRECT) work: some filesystems accept the
/// flag at open and refuse the transfers (EINVAL). Closes `fd` when they do not.
bool direct_works(int fd) {
  AlignedBuffer probe(kIoAlignment);
  std::memset(probe.data(), 0, probe.size());
  if (pwrite(fd, probe.data(), probe.size(), 0) == static_cast<ssize_t>(probe.size())) return true;
  close(fd);
  return false;
}

/// A file of its own for this process in the directory of `path`, with O_DIRECT when
/// `direct`: an unnamed one (O_TMPFILE) where the filesystem makes them, else `path` with a
/// suffix of this process's (created exclusively, unlinked by the caller; `named` set). Two
/// jobs that share parallel.nvme_path and its file names never open one file. -1 on failure.
int open_own(const std::string& path, bool direct, std::string& named) {
  const int flags = O_RDWR | O_CLOEXEC | (direct ? O_DIRECT : 0);
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  named.clear();
  int fd = open(dir.c_str(), flags | O_TMPFILE, 0600);
  if (fd >= 0) return fd;
  const int tmpfile_errno = errno;
  if (tmpfile_errno == ENOENT || tmpfile_errno == ENOTDIR || tmpfile_errno == EACCES) return -1;
  for (int attempt = 0; attempt < 8 && fd < 0; ++attempt) {
    std::random_device rd;
    named = path + "." + std::to_string(getpid()) + "." + std::to_string(rd());
    fd = open(named.c_str(), flags | O_CREAT | O_EXCL, 0600);
    if (fd < 0 && errno != EEXIST) break;
  }
  if (fd < 0) named.clear();
  return fd;
}

}  // namespace

TierFile::TierFile(const std::string& path, off_t bytes) {
  std::string named;  // the file's name while it has one
  fd_ = open_own(path, /*direct=*/true, named);
  direct_ = fd_ >= 0 && direct_works(fd_);
  if (fd_ >= 0 && !direct_) {
    if (!named.empty()) unlink(named.c_str());
    fd_ = -1;
  }
  if (fd_ < 0) fd_ = open_own(path, /*direct=*/false, named);
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
    if (!named.empty()) unlink(named.c_str());
    throw error;
  }
  if (!named.empty()) unlink(named.c_str());
}

TierFile::~TierFile() {
  if (fd_ >= 0) close(fd_);
}

}  // namespace trident
