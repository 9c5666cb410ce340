// Gathering, prefetching and releasing stage 3's parameter buckets.
#include "zero/param_gatherer.h"

#include <ATen/ATen.h>             // at::empty, at::full, Tensor ops
#include <c10/core/StorageImpl.h>  // StorageImpl::set_data_ptr_noswap
#include <c10/util/Exception.h>    // TORCH_CHECK

#include <algorithm>  // std::find_if, std::max, std::fill
#include <map>        // std::map

#include "common/aligned_buffer.h"  // align_up, kIoAlignment
#include "common/host_memory.h"     // new_host_block: heap, or mapped when released

namespace trident {

ParamGatherer::ParamGatherer(std::vector<Parameter>& params, std::vector<ShardedBuffer> buffers,
                             Communicator& dp, const std::vector<std::vector<size_t>>& units,
                             const GatherOptions& options)
    : params_(params), buffers_(std::move(buffers)), dp_(dp), options_(options) {
  TORCH_CHECK(options.max_live_layers >= 1, "parallel.zero3_max_live_layers must be >= 1, got ",
              options.max_live_layers);
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
      used.at(p) = true;
      if (!where.count(p)) continue;  // kept whole: nothing to gather
      const BucketRef r = where[p];
      auto same = [&r](const BucketRef& o) { return o.buffer == r.buffer && o.bucket == r.bucket; };
      if (std::find_if(refs.begin(), refs.end(), same) == refs.end()) refs.push_back(r);
    }
    units_.push_back(refs);
    unit_names_.push_back(unit.empty() ? "(empty)" : params.at(unit.front()).spec.name);
  }
  // Spares for the gathers the live bound allows (and one layer more, the prefetch that
  // starts before the last layer's release): released buffers are reused as they are,
  // never handed back to the heap, where activations allocated between gathers would split
  // them (with trident's malloc settings the heap then grew by a layer's weights per layer).
  for (int u = 0; u < num_units(); ++u)
    spare_limit_ = std::max(spare_limit_, unit_memory(u) * (options.max_live_layers + 1));
  holds_.assign(units_.size(), 0);
  checks_.resize(units_.size());
  prefetched_.assign(units_.size(), false);
  // Everything starts released; parameters no layer claims stay gathered for good.
  for (size_t bi = 0; bi < buffers_.size(); ++bi)
    for (size_t b = 0; b < states_[bi].size(); ++b) detach_params({bi, b});
  for (size_t p = 0; p < params.size(); ++p) {
    if (used[p] || !where.count(p)) continue;
    acquire(where[p]);
    make_ready(where[p]);
    ++state(where[p]).pinned;
  }
}

ParamGatherer::~ParamGatherer() {
  for (auto& buffer : states_)
    for (BucketState& s : buffer)
      if (s.loading) {
        try {
          s.loading();
        } catch (...) {  // the run is ending on an error already; the read has landed
        }
      }
}

void ParamGatherer::acquire_unit(int unit, int direction) {
  TORCH_CHECK(unit >= 0 && unit < num_units(), "ZeRO stage 3: layer ", unit,
              " does not exist (the stage has ", units_.size(), ")");
  if (holds_[unit] > 0 && !options_.reshard_after_forward) return;  // gathered until step end
  if (prefetched_[unit]) {
    prefetched_[unit] = false;  // the prefetch's hold becomes this use's
  } else {
    hold_unit(unit, /*verified=*/true);
  }
  verify_order(unit);  // before any of the unit's gathered values is used
  for (const BucketRef& r : units_[unit]) make_ready(r);
  // The next layer in this direction is known (the model's order): start its gather now,
  // so that it runs while this layer computes, if the live bound allows.
  const int next = unit + direction;
  if (options_.prefetch && options_.reshard_after_forward && next >= 0 && next < num_units() &&
      holds_[next] == 0 && live_units() < options_.max_live_layers) {
    hold_unit(next, /*verified=*/false);
    prefetched_[next] = true;
  }
}

void ParamGatherer::end_forward(int unit) {
  if (options_.reshard_after_forward) release_unit(unit);
}

void ParamGatherer::end_backward(int unit) {
  if (options_.reshard_after_forward) release_unit(unit);
}

void ParamGatherer::end_micro_batch() {
  if (options_.reshard_after_forward) release_all();
}

void ParamGatherer::hold_unit(int unit, bool verified) {
  post_order_check(unit);
  if (verified) verify_order(unit);  // no bucket of a mismatched layer is ever posted
  ++holds_[unit];
  ++unit_gathers_;
  for (const BucketRef& r : units_[unit]) acquire(r);
}

void ParamGatherer::release_unit(int unit) {
  if (holds_[unit] == 0) return;  // already dropped by release_all()
  --holds_[unit];
  for (const BucketRef& r : units_[unit]) release(r);
}

int ParamGatherer::live_units() const {
  int n = 0;
  for (int h : holds_) n += h > 0 ? 1 : 0;
  return n;
}

void ParamGatherer::post_order_check(int unit) {
  // Every dp rank must gather the same layer at the same point: otherwise the bucket
  // all-gathers pair up buffers of different layers (or sizes) and the job would hang or
  // compute garbage. Eight bytes per gather buy a message naming the rank and the layer;
  // posted without waiting, so that a prefetch stays asynchronous.
  if (dp_.size() == 1) return;
  OrderCheck& c = checks_[unit];
  if (c.work) c.work->wait();
  c.mine = at::full({1}, static_cast<int64_t>(unit), at::kLong);
  c.all = at::empty({dp_.size()}, at::kLong);
  c.work = dp_.all_gather(c.all, c.mine);
}

void ParamGatherer::verify_order(int unit) {
  OrderCheck& c = checks_[unit];
  if (!c.work) return;
  c.work->wait();
  c.work = nullptr;
  const at::Tensor all = c.all;
  for (int r = 0; r < dp_.size(); ++r) {
    const int64_t theirs = all[r].item<int64_t>();
    if (theirs == unit) continue;
    const std::string name =
        theirs >= 0 && theirs < num_units() ? unit_names_[theirs] : std::string("?");
    TORCH_CHECK(false, "ZeRO stage 3: dp rank ", dp_.rank(), " gathers layer ", unit, " (",
                unit_names_[unit], "...) while dp rank ", r, " gathers layer ", theirs, " (", name,
                "...): every dp rank must run its layers in the same order");
  }
}

void ParamGatherer::acquire(const BucketRef& r) {
  BucketState& s = state(r);
  if (s.refs++ > 0) return;
  const ShardedBuffer& buf = buffers_[r.buffer];
  const Bucket& bucket = buf.layout->buckets()[r.bucket];
  // A fresh buffer, unless autograd still holds views of the one released last: those
  // views must read the parameters again, so the gather refills that storage.
  const auto opts = buf.shard.options();
  const size_t nbytes = buffer_memory(r);
  if (s.hollow.defined() && s.hollow.storage().use_count() > 1) {
    c10::StorageImpl* storage = s.hollow.storage().unsafeGetStorageImpl();
    storage->set_data_ptr_noswap(take_memory(nbytes, opts.device()));
    storage->set_nbytes(nbytes);
    s.data = s.hollow;
  } else {
    c10::Storage storage(c10::Storage::use_byte_size_t(), nbytes,
                         take_memory(nbytes, opts.device()),
                         c10::GetAllocator(opts.device().type()), /*resizable=*/false);
    s.data = at::empty({0}, opts).set_(storage, 0, {bucket.numel}, {1});  // (bucket) param dtype
  }
  s.hollow = at::Tensor();
  if (buf.load) {
    // From the tier: the read runs until make_ready(), which then gathers. One dp rank
    // holds the whole bucket: the read fills the gathered buffer itself.
    s.loading = buf.load(r.bucket, group_of(buf).size() == 1 ? s.data : at::Tensor());
  } else {
    gather_from(r,
                buf.shard.narrow(0, buf.layout->shard_space_offset(r.bucket), bucket.shard_numel));
  }
  gathered_bytes_ += s.data.numel() * static_cast<int64_t>(s.data.element_size());
  peak_bytes_ = std::max(peak_bytes_, gathered_bytes_);
}

void ParamGatherer::gather_from(const BucketRef& r, const at::Tensor& mine) {
  BucketState& s = state(r);
  Communicator& group = group_of(buffers_[r.buffer]);
  if (group.size() == 1) {
    s.data.copy_(mine);
  } else {
    s.work = group.all_gather(s.data, mine);
  }
}

void ParamGatherer::make_ready(const BucketRef& r) {
  BucketState& s = state(r);
  if (s.loading) {
    const at::Tensor mine = s.loading();
    s.loading = nullptr;
    if (!mine.is_same(s.data)) gather_from(r, mine);
  }
  if (s.work) {
    s.work->wait();
    s.work = nullptr;
  }
  const ShardedBuffer& buf = buffers_[r.buffer];
  const Bucket& bucket = buf.layout->buckets()[r.bucket];
  for (size_t p : bucket.params) {
    const size_t i = buf.params[p];
    at::Tensor& t = params_[i].tensor;
    const ParamPlace& place = buf.layout->places()[p];
    at::Tensor view = s.data.narrow(0, place.offset - bucket.offset, place.numel);
    if (t.numel() > 0 && t.data_ptr() == view.data_ptr()) continue;  // already in place
    t.set_data(view.view(shapes_[i]));
  }
}

void ParamGatherer::release(const BucketRef& r) {
  BucketState& s = state(r);
  TORCH_CHECK(s.refs > 0, "ZeRO stage 3: bucket ", r.bucket, " released more often than gathered");
  if (--s.refs > 0) return;
  if (s.loading) s.loading();  // a prefetch never used: its read must land first
  s.loading = nullptr;
  if (s.work) s.work->wait();  // likewise its all-gather
  s.work = nullptr;
  detach_params(r);
  gathered_bytes_ -= s.data.numel() * static_cast<int64_t>(s.data.element_size());
  // The memory goes back to the spares; views autograd saved for backward keep the
  // storage, now empty, until the layer's backward gathers into it again.
  c10::StorageImpl* storage = s.data.storage().unsafeGetStorageImpl();
  const size_t nbytes = storage->nbytes();
  give_memory(storage->set_data_ptr(at::DataPtr(nullptr, s.data.device())), nbytes);
  storage->set_nbytes(0);
  if (s.data.storage().use_count() > 1) s.hollow = s.data;
  s.data = at::Tensor();
}

at::DataPtr ParamGatherer::take_memory(size_t nbytes, at::Device device) {
  auto it = spares_.find(nbytes);
  if (it == spares_.end() || it->second.empty()) {
    if (!device.is_cpu()) return c10::GetAllocator(device.type())->allocate(nbytes);
    HostBlock* block = new_host_block(nbytes);
    return at::DataPtr(block->data, block, &delete_host_block, device);
  }
  at::DataPtr memory = std::move(it->second.back());
  it->second.pop_back();
  spare_bytes_ -= static_cast<int64_t>(nbytes);
  return memory;
}

void ParamGatherer::give_memory(at::DataPtr memory, size_t nbytes) {
  // Gathered and spare together stay within the live bound plus one layer.
  if (gathered_bytes_ + spare_bytes_ + static_cast<int64_t>(nbytes) > spare_limit_) return;
  spares_[nbytes].push_back(std::move(memory));
  spare_bytes_ += static_cast<int64_t>(nbytes);
}

void ParamGatherer::detach_params(const BucketRef& r) {
  const ShardedBuffer& buf = buffers_[r.buffer];
  for (size_t p : buf.layout->buckets()[r.bucket].params)
    params_[buf.params[p]].tensor.set_data(at::empty({0}, buf.shard.options()));
}

void ParamGatherer::release_all() {
  for (size_t bi = 0; bi < states_.size(); ++bi)
    for (size_t b = 0; b < states_[bi].size(); ++b)
      while (states_[bi][b].refs > states_[bi][b].pinned) release({bi, b});
  std::fill(holds_.begin(), holds_.end(), 0);
  std::fill(prefetched_.begin(), prefetched_.end(), false);
  for (int u = 0; u < num_units(); ++u) verify_order(u);  // none may be left in flight
}

void ParamGatherer::gather_all() {
  for (size_t bi = 0; bi < states_.size(); ++bi)
    for (size_t b = 0; b < states_[bi].size(); ++b) acquire({bi, b});
  for (size_t bi = 0; bi < states_.size(); ++bi)
    for (size_t b = 0; b < states_[bi].size(); ++b) make_ready({bi, b});
}

size_t ParamGatherer::buffer_memory(const BucketRef& r) const {
  const ShardedBuffer& buf = buffers_[r.buffer];
  const size_t bytes = static_cast<size_t>(buf.layout->buckets()[r.bucket].numel) *
                       c10::elementSize(buf.shard.scalar_type());
  // Host buffers get whole blocks of room at a block boundary: the tier reads a rank's
  // shard straight into them when the rank holds the whole bucket (dp 1).
  return buf.shard.device().is_cpu() ? align_up(bytes) : bytes;
}

int64_t ParamGatherer::unit_memory(int unit) const {
  int64_t bytes = 0;
  for (const BucketRef& r : units_.at(unit)) bytes += static_cast<int64_t>(buffer_memory(r));
  return bytes;
}

int64_t ParamGatherer::unit_bytes(int unit) const {
  int64_t bytes = 0;
  for (const BucketRef& r : units_.at(unit)) {
    const ShardedBuffer& buf = buffers_[r.buffer];
    bytes += buf.layout->buckets()[r.bucket].numel * static_cast<int64_t>(buf.shard.element_size());
  }
  return bytes;
}

}  // namespace trident
