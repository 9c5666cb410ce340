// SliceReader: plan, verify, copy.
#include "checkpoint/reader.h"

#include <ATen/ATen.h>  // Tensor::copy_, at::empty

#include <algorithm>  // std::reverse
#include <set>        // std::set

namespace trident::checkpoint {

void SliceReader::add(const std::string& name, const Box& global, at::Tensor dst,
                      bool zero_outside) {
  const auto it = index_.tensors.find(name);
  if (it == index_.tensors.end())
    throw CheckpointError("checkpoint " + index_.dir + " has no tensor " + name);
  const TensorInfo& info = it->second;
  TORCH_CHECK(dst.sizes().vec() == global.shape, "SliceReader: destination of ", name,
              " has the wrong shape");
  if (global.shape.size() != info.shape.size())
    throw CheckpointError("checkpoint " + index_.dir + ": tensor " + name + " has shape " +
                          shape_text(info.shape) + ", which does not hold " + describe(global));
  const Box stored = intersect(global, full_box(info.shape));
  if (stored.numel() != global.numel()) {
    if (!zero_outside)
      throw CheckpointError("checkpoint " + index_.dir + ": tensor " + name + " has shape " +
                            shape_text(info.shape) + ", which does not hold " + describe(global));
    zero_first_.push_back(dst);
  }
  int64_t covered = 0;
  for (const SliceRef& s : info.slices) {
    const Box part = intersect(stored, s.box);
    if (part.numel() == 0) continue;
    covered += part.numel();
    copies_.push_back({&s, part, dst, global});
    planned_bytes_ += part.numel() * static_cast<int64_t>(dst.element_size());
  }
  if (covered != stored.numel())
    throw CheckpointError("checkpoint " + index_.dir + ": the slices of " + name + " cover " +
                          std::to_string(covered) + " of the " + std::to_string(stored.numel()) +
                          " elements of " + describe(stored) +
                          "; the index is damaged or was not written by a complete save");
}

void SliceReader::verify() {
  for (const Copy& c : copies_) {
    const std::string& file = c.slice->file;
    if (files_.count(file)) continue;
    const std::string path = index_.path_of(file);
    const FileInfo& info = index_.files.at(file);
    // Size and checksum are checked before anything of the file is believed.
    auto opened =
        std::make_unique<SafetensorsFile>(path, SafetensorsFile::Expected{info.bytes, info.xxh64});
    files_[file] = std::move(opened);
  }
  for (const Copy& c : copies_) check_entry(c);
  verified_ = true;
}

void SliceReader::check_entry(const Copy& c) const {
  const auto it = files_.find(c.slice->file);
  TORCH_CHECK(it != files_.end(), "SliceReader: ", c.slice->file, " was never verified");
  const SafetensorsFile& f = *it->second;
  const SafetensorsFile::Entry* e = f.find(c.slice->key);
  if (e == nullptr)
    throw CheckpointError("checkpoint file " + f.path() + " has no tensor " + c.slice->key +
                          ", which the index lists");
  std::vector<int64_t> shape = c.slice->box.shape;
  if (c.slice->transposed) std::reverse(shape.begin(), shape.end());
  if (e->shape != shape)
    throw CheckpointError("checkpoint file " + f.path() + ": tensor " + c.slice->key +
                          " has shape " + shape_text(e->shape) + " but the index says " +
                          shape_text(shape));
}

void SliceReader::execute() {
  TORCH_CHECK(verified_, "SliceReader::execute before verify");
  for (const Copy& c : copies_) check_entry(c);  // cheap: a header lookup
  for (at::Tensor& t : zero_first_) t.zero_();
  for (const Copy& c : copies_) {
    at::Tensor src = files_.at(c.slice->file)->view(c.slice->key);
    if (c.slice->transposed) src = src.t();
    narrow_to(c.dst, c.dst_box, c.part).copy_(narrow_to(src, c.slice->box, c.part));
  }
  // What was copied stays in the page cache, not in this process: a load streamed window
  // by window does not hold the checkpoint's pages it has read. Only the files this plan
  // read: a window's copies come from a few of them.
  std::set<const SafetensorsFile*> read;
  for (const Copy& c : copies_) read.insert(files_.at(c.slice->file).get());
  for (const SafetensorsFile* f : read) f->drop_pages();
  clear();
}

void SliceReader::clear() {
  copies_.clear();
  zero_first_.clear();
}

at::Tensor read_global_tensor(const CheckpointIndex& index, const std::string& name) {
  const auto it = index.tensors.find(name);
  if (it == index.tensors.end())
    throw CheckpointError("checkpoint " + index.dir + " has no tensor " + name);
  at::Tensor out =
      at::empty(it->second.shape, at::TensorOptions().dtype(dtype_from_name(it->second.dtype)));
  SliceReader reader(index);
  reader.add(name, full_box(it->second.shape), out);
  reader.verify();
  reader.execute();
  return out;
}

}  // namespace trident::checkpoint
