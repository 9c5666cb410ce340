// tier_stream: an AdamW step streamed through NvmeTier, and the same step in memory.
#include "plan/calibrate/tier_stream.h"

#include <ATen/ATen.h>  // at::full, Tensor ops
#include <unistd.h>     // getpid

#include <algorithm>  // std::max, std::min
#include <memory>     // std::make_shared
#include <vector>     // std::vector

#include "common/async_io.h"         // make_async_io
#include "plan/calibrate/compute.h"  // adamw_update
#include "plan/calibrate/timing.h"   // time_per_call, mean_over_ranks
#include "zero/nvme_tier.h"          // NvmeTier, TierRing

namespace trident::calibrate {
namespace {

constexpr int64_t kPiece = 1 << 20;  // elements: 4 MiB of fp32, offload_block_size's default
constexpr int64_t kPieces = 12;
constexpr int kRing = 4;  // offload_buffer_count's default

}  // namespace

double TierStream::s_per_gb() const {
  return bytes > 0 ? std::max(0.0, stream_s - memory_s) / (bytes / 1e9) : 0.0;
}

TierStream tier_stream(const std::string& dir, Communicator& world, double budget) {
  TierStream out;
  const int64_t n = kPiece * kPieces;
  at::Tensor param = at::full({n}, 0.5f);
  {
    // Planes 0, 1: the moments; plane 2: the gradient, which the update only reads.
    const std::vector<at::ScalarType> planes(3, at::kFloat);
    auto ring = std::make_shared<TierRing>();
    for (int i = 0; i < kRing; ++i)
      ring->buffers.emplace_back(NvmeTier::record_bytes(planes, kPiece));
    const std::unique_ptr<AsyncIo> io = make_async_io(kRing * 4);
    NvmeTier tier(dir + "/trident-calibrate-stream-" + std::to_string(getpid()) + ".tier", planes,
                  std::vector<int64_t>(kPieces, kPiece), ring, *io);
    tier.stream(
        [](size_t, std::vector<at::Tensor>& pl) {
          for (auto& p : pl) p.fill_(0.25f);
        },
        /*read=*/false, /*write=*/true);
    auto step = [&] {
      tier.stream(
          [&](size_t k, std::vector<at::Tensor>& pl) {
            adamw_update(param.narrow(0, static_cast<int64_t>(k) * kPiece, kPiece), pl[2], pl[0],
                         pl[1]);
          },
          /*read=*/true, /*write=*/true, /*unchanged=*/2);
    };
    out.stream_s = mean_over_ranks(time_per_call(step, budget, world), world);
    out.bytes = static_cast<double>(n) * 4.0 * (3 + 2);
  }
  at::Tensor grad = at::full({n}, 0.25f), exp_avg = at::full({n}, 0.25f),
             exp_avg_sq = at::full({n}, 0.25f);
  auto in_memory = [&] {
    for (int64_t k = 0; k < kPieces; ++k)
      adamw_update(param.narrow(0, k * kPiece, kPiece), grad.narrow(0, k * kPiece, kPiece),
                   exp_avg.narrow(0, k * kPiece, kPiece), exp_avg_sq.narrow(0, k * kPiece, kPiece));
  };
  out.memory_s = mean_over_ranks(time_per_call(in_memory, 0.5 * budget, world), world);
  return out;
}

}  // namespace trident::calibrate
