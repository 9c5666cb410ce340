// A read-only memory mapping of a whole file, on POSIX open/fstat/mmap.
#include "data/mapped_file.h"

#include <fcntl.h>     // open, O_RDONLY
#include <sys/mman.h>  // mmap, munmap, madvise
#include <sys/stat.h>  // fstat
#include <unistd.h>    // close, sysconf

#include <algorithm>  // std::min
#include <cerrno>     // errno
#include <cstring>    // std::strerror
#include <utility>    // std::exchange

#include "data/data_error.h"  // DataError

namespace trident::data {

MappedFile::MappedFile(const std::string& path) : path_(path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    throw DataError("data file " + path + ": cannot open (" + std::strerror(errno) +
                    "); check the path in data.source");
  }
  struct stat st {};
  if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
    ::close(fd);
    throw DataError("data file " + path + ": not a regular file; check the path in data.source");
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    if (p == MAP_FAILED) {
      const int err = errno;
      ::close(fd);
      throw DataError("data file " + path + ": cannot map into memory (" + std::strerror(err) +
                      ")");
    }
    data_ = static_cast<const std::byte*>(p);
  }
  ::close(fd);  // the mapping stays valid after the descriptor is closed
}

MappedFile::~MappedFile() { release(); }

MappedFile::MappedFile(MappedFile&& other) noexcept
    : path_(std::move(other.path_)),
      data_(std::exchange(other.data_, nullptr)),
      size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    release();
    path_ = std::move(other.path_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

void MappedFile::release() {
  if (data_ != nullptr) ::munmap(const_cast<std::byte*>(data_), size_);
  data_ = nullptr;
  size_ = 0;
}

void MappedFile::drop_pages(size_t begin, size_t length) const {
  if (data_ == nullptr || begin >= size_) return;
  // madvise takes page-aligned starts: round the range inward at the front.
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t first = (begin + page - 1) / page * page;
  const size_t end = std::min(size_, begin + length);
  if (first >= end) return;
  // Advice only: a failure leaves the pages resident, which is what not calling it does.
  ::madvise(const_cast<std::byte*>(data_) + first, end - first, MADV_DONTNEED);
}

}  // namespace trident::data
