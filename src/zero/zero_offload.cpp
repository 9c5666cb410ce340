// ZeroOptimizer, nvme tier: the optimizer's shard (and in stage 3 the parameter shard) in
// per-rank files, streamed piece by piece through the AdamW step; checkpoint access
// brings it into memory and sends it back.
#include <ATen/ATen.h>           // at::zeros, Tensor ops
#include <c10/util/Exception.h>  // TORCH_CHECK

#include <algorithm>   // std::max, std::min
#include <filesystem>  // std::filesystem::create_directories
#include <sstream>     // std::ostringstream

#include "parallel/parallel_context.h"  // ParallelContext
#include "zero/zero_optimizer.h"

namespace trident {

void ZeroOptimizer::init_tier() {
  const OffloadOptions& o = zero_.offload;
  TORCH_CHECK(!o.dir.empty(), "ZeRO offload: the nvme tier needs a directory (nvme_path)");
  TORCH_CHECK(o.buffer_count >= 3, "ZeRO offload: the ring needs 3 buffers at least, got ",
              o.buffer_count);
  TORCH_CHECK(!o.params || zero_.stage == 3,
              "ZeRO offload: parameters are offloaded in stage 3 only");
  TORCH_CHECK(device_.is_cpu(),
              "ZeRO offload: the nvme tier streams host tensors; the "
              "parameters are on ",
              device_);
  // Pieces of whole update chunks, as many as fit the block size (one at least).
  const int64_t chunk_bytes = kUpdateChunk * static_cast<int64_t>(c10::elementSize(state_dtype_));
  const int64_t piece_numel = std::max<int64_t>(1, o.block_size / chunk_bytes) * kUpdateChunk;

  std::vector<std::vector<at::ScalarType>> planes(groups_.size());
  size_t record = 0;
  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Group& g = groups_[gi];
    auto add = [&](at::ScalarType t) {
      planes[gi].push_back(t);
      return static_cast<int>(planes[gi].size()) - 1;
    };
    if (has_master()) g.master_plane = add(state_dtype_);
    g.exp_avg_plane = add(state_dtype_);
    g.exp_avg_sq_plane = add(state_dtype_);
    if (o.params && !g.data.defined()) g.param_plane = add(param_dtype_);
    if (shards_grads()) g.grad_plane = add(state_dtype_);
    int64_t longest = 0;
    for (size_t b = 0; b < g.layout.buckets().size(); ++b) {
      g.first_piece.push_back(g.pieces.size());
      const int64_t n = domain(g, b).size();
      for (int64_t i = 0; i < n; i += piece_numel) {
        g.pieces.push_back({b, i, std::min(piece_numel, n - i)});
        longest = std::max(longest, g.pieces.back().length);
      }
    }
    record = std::max(record, NvmeTier::record_bytes(planes[gi], longest));
  }
  io_ = make_async_io(o.buffer_count * 4, o.backend);
  staging_ = std::make_shared<StagingPool>();
  // The gradient shard's buffer at its largest at once: grown bucket by bucket, it would
  // leave every smaller size behind in the pool.
  int64_t largest_grad = 0;
  for (const Group& g : groups_)
    if (g.grad_plane >= 0)
      for (size_t b = 0; b < g.layout.buckets().size(); ++b)
        largest_grad = std::max(largest_grad, domain(g, b).size());
  if (largest_grad > 0) grad_staging_ = staging_->take(largest_grad, state_dtype_);
  ring_ = std::make_shared<TierRing>();
  for (int i = 0; i < o.buffer_count; ++i) ring_->buffers.emplace_back(record);
  std::filesystem::create_directories(o.dir);

  for (size_t gi = 0; gi < groups_.size(); ++gi) {
    Group& g = groups_[gi];
    if (g.pieces.empty()) continue;
    std::vector<int64_t> lengths;
    for (const Group::Piece& p : g.pieces) lengths.push_back(p.length);
    const std::string path = o.dir + "/rank" + std::to_string(ctx_.world().rank()) + ".buffer" +
                             std::to_string(gi) + ".tier";
    g.tier = std::make_unique<NvmeTier>(path, planes[gi], lengths, ring_, *io_);
    // The initial states: master weights from the parameters (or drawn here, piece by
    // piece, for parameters that never exist whole), zero moments and gradient.
    const bool drawn = !g.data.defined() && !g.param_shard.defined();
    g.tier->stream(
        [&](size_t k, std::vector<at::Tensor>& pl) {
          const Group::Piece& p = g.pieces[k];
          at::Tensor param;
          if (drawn) {
            param = g.param_plane >= 0
                        ? pl[g.param_plane]
                        : at::empty({p.length}, pl[g.exp_avg_plane].options().dtype(param_dtype_));
            draw_domain(g, p.bucket, p.begin, p.length, param);
          } else {
            param = params_in_domain(g, p.bucket).narrow(0, p.begin, p.length);
            if (g.param_plane >= 0) pl[g.param_plane].copy_(param);
          }
          if (g.master_plane >= 0) pl[g.master_plane].copy_(param);
          pl[g.exp_avg_plane].zero_();
          pl[g.exp_avg_sq_plane].zero_();
          if (g.grad_plane >= 0) pl[g.grad_plane].zero_();
        },
        /*read=*/false, /*write=*/true);
    if (g.param_plane >= 0) g.param_shard = at::Tensor();  // the tier holds it now
    g.grad_shard = at::Tensor();                           // and the gradient shard
  }
  states_in_tier_ = true;
}

void ZeroOptimizer::stream_update(Group& g, double lr, double grad_scale) {
  finish_grad_writes();  // the stream reads the gradient plane
  g.tier->stream(
      [&](size_t k, std::vector<at::Tensor>& pl) {
        const Group::Piece& p = g.pieces[k];
        at::Tensor param = g.param_plane >= 0
                               ? pl[g.param_plane]
                               : params_in_domain(g, p.bucket).narrow(0, p.begin, p.length);
        at::Tensor master = g.master_plane >= 0 ? pl[g.master_plane] : param;
        at::Tensor grad;  // the plane read is stale where nothing was stored this step
        if (g.grad_plane >= 0) {
          grad = pl[g.grad_plane];
          if (!g.grad_stored[p.bucket]) grad.zero_();
        }
        update_range(g, p.bucket, p.begin, p.length, master, pl[g.exp_avg_plane],
                     pl[g.exp_avg_sq_plane], param, grad, lr, grad_scale);
      },
      /*read=*/true, /*write=*/true, /*unchanged=*/g.grad_plane);
}

namespace {

/// Whether the tier may read `n` elements straight into `t`: contiguous at a block
/// boundary, with its storage's room reaching the whole block past the n-th element.
bool readable_into(const at::Tensor& t, int64_t n) {
  const size_t bytes = static_cast<size_t>(n) * t.element_size();
  const size_t offset = static_cast<size_t>(t.storage_offset()) * t.element_size();
  return t.is_contiguous() && t.numel() == n &&
         reinterpret_cast<uintptr_t>(t.data_ptr()) % kIoAlignment == 0 &&
         t.storage().nbytes() >= offset + align_up(bytes);
}

}  // namespace

std::function<at::Tensor()> ZeroOptimizer::post_param_load(size_t gi, size_t b, at::Tensor dst) {
  Group& g = groups_[gi];
  const int64_t n = domain(g, b).size();
  if (!states_in_tier_) {  // not in the tier yet (before init_tier)
    at::Tensor shard = g.param_shard.narrow(0, g.layout.shard_space_offset(b), n);
    if (!dst.defined()) return [shard] { return shard; };
    dst.copy_(shard);
    return [dst] { return dst; };
  }
  // Each piece's plane lands at its place in one aligned tensor: pieces are whole update
  // chunks, so every one but the last starts and ends on a block boundary, and the tail
  // of the last needs the room rounded up to a whole block.
  const bool direct = dst.defined() && readable_into(dst, n);
  at::Tensor shard = direct ? dst : staging_->take(n, param_dtype_);
  const std::vector<uint64_t> tickets = post_bucket(g, b, g.param_plane, shard, false);
  NvmeTier* tier = g.tier.get();
  return [tier, shard, tickets, dst] {
    tier->finish_all(tickets);
    if (dst.defined() && !dst.is_same(shard)) {
      dst.copy_(shard);
      return dst;
    }
    return shard;
  };
}

std::vector<uint64_t> ZeroOptimizer::post_bucket(Group& g, size_t b, int plane,
                                                 const at::Tensor& memory, bool write) {
  char* base = static_cast<char*>(memory.data_ptr());
  const int64_t element = static_cast<int64_t>(memory.element_size());
  std::vector<uint64_t> tickets;
  try {
    for (size_t k = g.first_piece[b]; k < g.pieces.size() && g.pieces[k].bucket == b; ++k) {
      char* at = base + g.pieces[k].begin * element;
      const size_t p = static_cast<size_t>(plane);
      tickets.push_back(write ? g.tier->post_write(k, p, at) : g.tier->post_read(k, p, at));
    }
  } catch (...) {  // a refused post: let those already posted land before anyone frees
    g.tier->drain();
    throw;
  }
  return tickets;
}

void ZeroOptimizer::finish_grad_writes() {
  std::vector<std::pair<NvmeTier*, uint64_t>> writes;
  writes.swap(grad_writes_);  // each is waited for once, even if one fails
  if (writes.empty()) return;
  try {
    for (auto& [tier, ticket] : writes) tier->finish(ticket);
  } catch (...) {
    writes.front().first->drain();
    throw;
  }
}

std::string ZeroOptimizer::offload_description() const {
  if (!ring_) return "none";
  bool direct = true;
  int64_t file_bytes = 0;
  for (const Group& g : groups_)
    if (g.tier) {
      direct = direct && g.tier->direct();
      file_bytes += g.tier->file_bytes();
    }
  std::ostringstream out;
  out << "nvme ("
      << (zero_.offload.params ? "optimizer states and parameter shard" : "optimizer states")
      << ", " << io_->name() << ", " << (direct ? "O_DIRECT" : "page cache: O_DIRECT refused")
      << ", " << ring_->buffers.size() << " x " << ring_->buffers.front().size() / 1024
      << " KiB buffers, " << file_bytes / (1 << 20) << " MiB in " << zero_.offload.dir << ")";
  return out.str();
}

TierStats ZeroOptimizer::tier_stats() const {
  TierStats total;
  for (const Group& g : groups_) {
    if (!g.tier) continue;
    const TierStats& s = g.tier->stats();
    total.bytes_read += s.bytes_read;
    total.bytes_written += s.bytes_written;
    total.wait_s += s.wait_s;
    total.stream_s += s.stream_s;
  }
  return total;
}

}  // namespace trident
