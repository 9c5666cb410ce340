// Gathering and releasing stage 3's parameter buckets.
#include "zero/param_gatherer.h"

#include <ATen/ATen.h>           // at::empty, Tensor ops
#include <c10/util/Exception.h>  // TORCH_CHECK

#include <algorithm>  // std::find_if, std::max
#include <map>        // std::map

namespace trident {

ParamGatherer::ParamGatherer(std::vector<Parameter>& params, std::vector<ShardedBuffer> buffers,
                             Communicator& dp, const std::vector<std::vector<size_t>>& units)
    : params_(params), buffers_(std::move(buffers)), dp_(dp) {
  for (const Parameter& p : params) shapes_.push_back(p.tensor.sizes().vec());
  std::map<size_t, BucketRef> where;  // parameter -> its bucket
  for (size_t bi = 0; bi < buffers_.size(); ++bi) {
    const ShardedBuffer& b = buffers_[bi];
    states_.emplace_back(b.layout->buckets().size());
    for (size_t k = 0; k < b.params.size(); ++k)
      where[b.params[k]] = {bi, b.layout->places()[k].bucket};
  }
  std::vector<bool> used(params.size(), false);
  for (const auto& unit : units) {
    std::vector<BucketRef> refs;
    for (size_t p : unit) {
      TORCH_CHECK(where.count(p), "ZeRO stage 3: layer parameter ", p, " is in no buffer");
      used[p] = true;
      const BucketRef r = where[p];
      auto same = [&r](const BucketRef& o) { return o.buffer == r.buffer && o.bucket == r.bucket; };
      if (std::find_if(refs.begin(), refs.end(), same) == refs.end()) refs.push_back(r);
    }
    units_.push_back(refs);
  }
  // Parameters no layer claims stay gathered for good, and everything else starts released.
  for (size_t bi = 0; bi < buffers_.size(); ++bi)
    for (size_t b = 0; b < states_[bi].size(); ++b) detach_params({bi, b});
  for (size_t p = 0; p < params.size(); ++p)
    if (!used[p] && where.count(p)) {
      acquire(where[p]);
      ++state(where[p]).pinned;
    }
}

void ParamGatherer::acquire_unit(int unit) {
  TORCH_CHECK(unit >= 0 && unit < static_cast<int>(units_.size()), "ZeRO stage 3: layer ", unit,
              " does not exist (the stage has ", units_.size(), ")");
  for (const BucketRef& r : units_[unit]) acquire(r);
}

void ParamGatherer::release_unit(int unit) {
  for (const BucketRef& r : units_[unit]) release(r);
}

void ParamGatherer::acquire(const BucketRef& r) {
  BucketState& s = state(r);
  if (s.refs++ > 0) return;
  const ShardedBuffer& buf = buffers_[r.buffer];
  const Bucket& bucket = buf.layout->buckets()[r.bucket];
  // A fresh buffer per gather: autograd may still hold views of the previous one.
  s.data = at::empty({bucket.numel}, buf.shard.options());  // (bucket) param dtype
  const at::Tensor mine =
      buf.shard.narrow(0, buf.layout->shard_space_offset(r.bucket), bucket.shard_numel);
  if (dp_.size() == 1) {
    s.data.copy_(mine);
  } else {
    dp_.all_gather(s.data, mine)->wait();
  }
  for (size_t p : bucket.params) {
    const size_t i = buf.params[p];
    const ParamPlace& place = buf.layout->places()[p];
    params_[i].tensor.set_data(
        s.data.narrow(0, place.offset - bucket.offset, place.numel).view(shapes_[i]));
  }
  gathered_bytes_ += s.data.numel() * static_cast<int64_t>(s.data.element_size());
  peak_bytes_ = std::max(peak_bytes_, gathered_bytes_);
}

void ParamGatherer::release(const BucketRef& r) {
  BucketState& s = state(r);
  TORCH_CHECK(s.refs > 0, "ZeRO stage 3: bucket ", r.bucket, " released more often than gathered");
  if (--s.refs > 0) return;
  detach_params(r);
  gathered_bytes_ -= s.data.numel() * static_cast<int64_t>(s.data.element_size());
  s.data = at::Tensor();
}

void ParamGatherer::detach_params(const BucketRef& r) {
  const ShardedBuffer& buf = buffers_[r.buffer];
  for (size_t p : buf.layout->buckets()[r.bucket].params) {
    at::Tensor& t = params_[buf.params[p]].tensor;
    t.set_data(at::empty({0}, buf.shard.options()));
  }
}

void ParamGatherer::release_all() {
  for (size_t bi = 0; bi < states_.size(); ++bi)
    for (size_t b = 0; b < states_[bi].size(); ++b)
      while (states_[bi][b].refs > states_[bi][b].pinned) release({bi, b});
}

void ParamGatherer::gather_all() {
  for (size_t bi = 0; bi < states_.size(); ++bi)
    for (size_t b = 0; b < states_[bi].size(); ++b) acquire({bi, b});
}

}  // namespace trident
