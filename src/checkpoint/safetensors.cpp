// safetensors writing (streamed through a file descriptor, hashed as it goes) and reading
// (a memory mapping whose header is validated before any tensor is handed out).
#include "checkpoint/safetensors.h"

#include <ATen/ATen.h>  // at::from_blob, Tensor::contiguous
#include <fcntl.h>      // open
#include <unistd.h>     // write, fsync, close

#include <algorithm>          // std::stable_sort
#include <cerrno>             // errno
#include <cstring>            // std::strerror, std::memcpy
#include <filesystem>         // std::filesystem::exists
#include <nlohmann/json.hpp>  // nlohmann::json

#include "checkpoint/checksum.h"  // Xxh64, to_hex
#include "data/data_error.h"      // data::DataError

namespace trident::checkpoint {

namespace {

struct DtypeName {
  at::ScalarType dtype;
  const char* name;
};
constexpr DtypeName kDtypes[] = {
    {at::kDouble, "F64"}, {at::kFloat, "F32"}, {at::kBFloat16, "BF16"}, {at::kHalf, "F16"},
    {at::kLong, "I64"},   {at::kInt, "I32"},   {at::kShort, "I16"},     {at::kChar, "I8"},
    {at::kByte, "U8"},    {at::kBool, "BOOL"},
};

std::string os_error(const std::string& what, const std::string& path) {
  return what + " " + path + ": " + std::strerror(errno);
}

/// Writes all of `data`, hashing it; throws on a short write (a full disk).
void write_all(int fd, const void* data, size_t length, Xxh64& hash, const std::string& path) {
  hash.update(data, length);
  const auto* p = static_cast<const char*>(data);
  while (length > 0) {
    const ssize_t n = ::write(fd, p, length);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) throw CheckpointError(os_error("cannot write checkpoint file", path));
    p += n;
    length -= static_cast<size_t>(n);
  }
}

data::MappedFile map_file(const std::string& path) {
  if (!std::filesystem::exists(path))
    throw CheckpointError("checkpoint file " + path + " is missing");
  try {
    return data::MappedFile(path);
  } catch (const data::DataError& e) {
    throw CheckpointError(std::string("checkpoint file ") + path + ": " + e.what());
  }
}

}  // namespace

std::string dtype_name(at::ScalarType dtype) {
  for (const auto& d : kDtypes)
    if (d.dtype == dtype) return d.name;
  throw CheckpointError(std::string("safetensors cannot store dtype ") + c10::toString(dtype));
}

at::ScalarType dtype_from_name(const std::string& name) {
  for (const auto& d : kDtypes)
    if (name == d.name) return d.dtype;
  throw CheckpointError("unknown safetensors dtype '" + name + "'");
}

SafetensorsWriter::SafetensorsWriter(std::string path, const std::vector<Entry>& entries,
                                     const std::map<std::string, std::string>& metadata)
    : path_(std::move(path)), entries_(entries) {
  nlohmann::json header = nlohmann::json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  int64_t offset = 0;
  for (const Entry& e : entries_) {
    const int64_t size = static_cast<int64_t>(c10::elementSize(e.dtype));
    TORCH_CHECK(offset % size == 0, "safetensors: ", e.key, " would not be aligned in ", path_,
                "; order the tensors by decreasing element size");
    TORCH_CHECK(!header.contains(e.key), "duplicate tensor name ", e.key, " in ", path_);
    int64_t numel = 1;
    for (int64_t d : e.shape) numel *= d;
    header[e.key] = {{"dtype", dtype_name(e.dtype)},
                     {"shape", e.shape},
                     {"data_offsets", {offset, offset + numel * size}}};
    offset += numel * size;
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // the data section starts 8-aligned
  const uint64_t header_length = text.size();
  fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd_ < 0) throw CheckpointError(os_error("cannot create checkpoint file", path_));
  try {  // a constructor that throws runs no destructor: close the file here
    write_all(fd_, &header_length, 8, hash_, path_);
    write_all(fd_, text.data(), text.size(), hash_, path_);
  } catch (...) {
    ::close(fd_);
    throw;
  }
  bytes_ = static_cast<int64_t>(8 + header_length);
}

SafetensorsWriter::~SafetensorsWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void SafetensorsWriter::append(const at::Tensor& t) {
  TORCH_CHECK(next_ < entries_.size(), "safetensors: more tensors than entries in ", path_);
  const Entry& e = entries_[next_++];
  TORCH_CHECK(t.scalar_type() == e.dtype && t.sizes().vec() == e.shape, "safetensors: ", e.key,
              " in ", path_, " is not the tensor its header describes");
  const at::Tensor bytes = t.cpu().contiguous();
  const size_t length = bytes.numel() * bytes.element_size();
  write_all(fd_, bytes.data_ptr(), length, hash_, path_);
  bytes_ += static_cast<int64_t>(length);
}

WrittenFile SafetensorsWriter::finish() {
  TORCH_CHECK(next_ == entries_.size(), "safetensors: ", entries_.size() - next_, " tensors of ",
              path_, " were never written");
  const int fd = fd_;
  fd_ = -1;
  if (::fsync(fd) != 0) {
    ::close(fd);
    throw CheckpointError(os_error("cannot fsync checkpoint file", path_));
  }
  if (::close(fd) != 0) throw CheckpointError(os_error("cannot close checkpoint file", path_));
  return {bytes_, hash_.digest()};
}

WrittenFile write_safetensors(const std::string& path,
                              const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata,
                              const std::function<void(size_t)>& after_tensor) {
  // Larger elements first: every offset is then a multiple of its element size.
  std::vector<size_t> order(tensors.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) {
    return tensors[a].second.element_size() > tensors[b].second.element_size();
  });
  std::vector<SafetensorsWriter::Entry> entries;
  for (size_t i : order)
    entries.push_back(
        {tensors[i].first, tensors[i].second.scalar_type(), tensors[i].second.sizes().vec()});
  SafetensorsWriter writer(path, entries, metadata);
  for (size_t k = 0; k < order.size(); ++k) {
    writer.append(tensors[order[k]].second);
    if (after_tensor) after_tensor(k);
  }
  return writer.finish();
}

SafetensorsFile::SafetensorsFile(const std::string& path, const Expected& expected)
    : file_(map_file(path)) {
  const int64_t size = this->size();
  if (expected.bytes >= 0 && size != expected.bytes)
    throw CheckpointError("checkpoint file " + path + " has " + std::to_string(size) +
                          " bytes but the index says " + std::to_string(expected.bytes) +
                          "; the file is truncated or was replaced: restore it or load another "
                          "checkpoint");
  if (!expected.xxh64.empty()) {
    const std::string actual = to_hex(checksum());
    if (actual != expected.xxh64)
      throw CheckpointError("checkpoint file " + path + " fails its checksum (xxh64 " + actual +
                            ", the index says " + expected.xxh64 +
                            "); the file is corrupt: restore it or load another checkpoint");
  }
  auto bad = [&](const std::string& why) {
    return CheckpointError("checkpoint file " + path + " is not a valid safetensors file: " + why +
                           "; the file is truncated or corrupt");
  };
  if (size < 8) throw bad("shorter than its 8-byte header length");
  uint64_t header_length = 0;
  std::memcpy(&header_length, file_.data(), 8);
  if (header_length > static_cast<uint64_t>(size - 8))
    throw bad("header length " + std::to_string(header_length) + " is past the end of the file");
  const char* text = reinterpret_cast<const char*>(file_.data()) + 8;
  nlohmann::json header;
  try {
    header = nlohmann::json::parse(text, text + header_length);
  } catch (const nlohmann::json::exception& e) {
    throw bad(std::string("header is not JSON (") + e.what() + ")");
  }
  if (!header.is_object()) throw bad("header is not a JSON object");
  const int64_t data_start = 8 + static_cast<int64_t>(header_length);
  for (const auto& [name, value] : header.items()) {
    if (name == "__metadata__") {
      for (const auto& [k, v] : value.items())
        metadata_[k] = v.is_string() ? v.get<std::string>() : v.dump();
      continue;
    }
    Entry e;
    try {
      e.dtype = dtype_from_name(value.at("dtype").get<std::string>());
      e.shape = value.at("shape").get<std::vector<int64_t>>();
      const auto offsets = value.at("data_offsets").get<std::vector<int64_t>>();
      if (offsets.size() != 2) throw bad("tensor " + name + ": data_offsets needs two numbers");
      // Checked before adding: offsets from a corrupt header may overflow int64.
      if (offsets[0] < 0 || offsets[1] < offsets[0] || offsets[1] > size - data_start)
        throw bad("tensor " + name + " lies outside the file");
      e.begin = data_start + offsets[0];
      e.end = data_start + offsets[1];
    } catch (const nlohmann::json::exception& ex) {
      throw bad("tensor " + name + ": " + ex.what());
    }
    // A corrupt shape's product may overflow: it is refused, not computed with.
    int64_t bytes = static_cast<int64_t>(c10::elementSize(e.dtype));
    for (int64_t d : e.shape)
      if (d < 0 || __builtin_mul_overflow(bytes, d, &bytes))
        throw bad("tensor " + name + " has a negative or overflowing shape");
    if (e.end - e.begin != bytes) throw bad("tensor " + name + " does not match its shape");
    entries_[name] = std::move(e);
  }
}

const SafetensorsFile::Entry* SafetensorsFile::find(const std::string& key) const {
  const auto it = entries_.find(key);
  return it == entries_.end() ? nullptr : &it->second;
}

at::Tensor SafetensorsFile::view(const std::string& key) const {
  const Entry* e = find(key);
  if (e == nullptr) throw CheckpointError("checkpoint file " + path() + " has no tensor " + key);
  void* data = const_cast<std::byte*>(file_.data() + e->begin);
  const auto options = at::TensorOptions().dtype(e->dtype);
  const size_t align = c10::elementSize(e->dtype);
  if (reinterpret_cast<uintptr_t>(data) % align == 0) return at::from_blob(data, e->shape, options);
  at::Tensor copy = at::empty(e->shape, options);  // files from other writers may not align
  std::memcpy(copy.data_ptr(), data, static_cast<size_t>(e->end - e->begin));
  return copy;
}

uint64_t SafetensorsFile::checksum() const {
  // In blocks, each dropped from the resident set once hashed: a checkpoint larger than
  // memory is verified without the mapping's pages piling up.
  constexpr size_t kBlock = size_t{64} << 20;
  Xxh64 hash;
  for (size_t at = 0; at < file_.size(); at += kBlock) {
    const size_t n = std::min(kBlock, file_.size() - at);
    hash.update(file_.data() + at, n);
    file_.drop_pages(at, n);
  }
  return hash.digest();
}

void SafetensorsFile::drop_pages() const { file_.drop_pages(0, file_.size()); }

void fsync_directory(const std::string& dir) {
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (fd < 0) throw CheckpointError(os_error("cannot open directory", dir));
  const int rc = ::fsync(fd);
  ::close(fd);
  if (rc != 0) throw CheckpointError(os_error("cannot fsync directory", dir));
}

}  // namespace trident::checkpoint
