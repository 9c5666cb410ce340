// tier_traffic and tier_wait_s: the nvme tier's bytes per step and the step's wait for them.
#include "plan/tier_model.h"

#include <algorithm>  // std::clamp, std::max, std::min

#include "plan/memory_model.h"  // stage3_split

namespace trident::plan {

TierTraffic tier_traffic(const PlanModel& m, const Layout& l, int stage) {
  TierTraffic t;
  if (m.offload_optimizer != "nvme") return t;
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  const double state = m.precision == "fp64" ? 8.0 : 4.0;
  const int64_t psi = stage_parameters(m, l.pp, l.tp, stage, l.ep);
  const int64_t experts = stage_expert_parameters(m, l.pp, l.tp, l.ep, stage);
  const int dp = std::max(l.replicas(), 1), expert_dp = std::max(l.expert_dp(), 1);
  // The optimizer's domain: the whole buffers in stage 0, the rank's shards from stage 1
  // (the routed experts' over expert-dp).
  const double domain = l.zero == 0 ? static_cast<double>(psi)
                                    : static_cast<double>(psi - experts) / dp +
                                          static_cast<double>(experts) / expert_dp;
  const double states = domain * (2.0 + (b.param < state ? 1.0 : 0.0)) * state;
  const double grad = l.zero >= 2 ? domain * b.grad_shard : 0.0;
  double param = 0.0;
  if (m.offload_params == "nvme" && l.zero == 3) {
    const Stage3Split split = stage3_split(m, l, stage);
    param = (static_cast<double>(psi - split.persistent - split.expert_sharded) / dp +
             static_cast<double>(split.expert_sharded) / expert_dp) *
            b.param;
    t.layer_read = static_cast<double>(split.largest_layer) / dp * b.param;
  }
  t.stream_read = states + grad + param;
  t.stream_write = states + param;
  const double micro = static_cast<double>(l.micro_batches(m));
  if (grad > 0) {
    t.grad_write = micro * grad;
    t.grad_read = (micro - 1.0) * grad;
  }
  if (param > 0) {
    t.gathers = m.zero3_reshard_after_forward ? 2 * l.micro_batches(m) : 1;
    t.gather_read = static_cast<double>(t.gathers) * param;
  }
  return t;
}

double tier_wait_s(const TierTraffic& t, const DiskRates& disk, const TierWindows& w) {
  if (disk.read_gbps <= 0 || disk.write_gbps <= 0 || t.total() <= 0) return 0.0;
  const double read = disk.read_gbps * 1e9, write = disk.write_gbps * 1e9;
  const double overlap = std::clamp(disk.overlap, 0.0, 1.0);
  const double stream_io = std::max(t.stream_read / read, t.stream_write / write);
  const double stream = disk.stream_s_per_gb >= 0
                            ? (t.stream_read + t.stream_write) / 1e9 * disk.stream_s_per_gb
                            : stream_io - overlap * std::min(stream_io, w.optimizer_s);
  const double gather_io = t.gather_read / read;
  const double gathers = gather_io - overlap * std::min(gather_io, w.compute_s);
  const double write_io = t.grad_write / write;
  const double gradient =
      t.grad_read / read + write_io - overlap * std::min(write_io, w.gradient_s);
  return stream + gathers + gradient + static_cast<double>(t.gathers) * t.layer_read / read;
}

}  // namespace trident::plan
