// The storing rule and the ZeRO ownership arithmetic (mirrors ZeroOptimizer's grouping).
#include "checkpoint/ownership.h"

#include "zero/bucket_layout.h"      // BucketLayout, Range
#include "zero/buffer_assignment.h"  // assign_buffers

namespace trident::checkpoint {

bool stores_param(const ParamSpec& spec, int tp_rank, int dp_rank, int zero_stage) {
  if (spec.tied_copy) return false;
  if (!is_primary_copy(spec.shard, tp_rank)) return false;
  if (zero_stage == 0 && dp_rank != 0) return false;
  return true;
}

std::vector<OwnedRange> zero_owned_ranges(const std::vector<Parameter>& params,
                                          const ParallelConfig& p, int dp_rank) {
  const int zero_stage = static_cast<int>(p.zero_stage), dp = static_cast<int>(p.dp);
  std::vector<int64_t> all_numels;
  for (const Parameter& param : params) {
    int64_t n = 1;
    for (int64_t d : local_shape(param.spec, static_cast<int>(p.tp))) n *= d;
    all_numels.push_back(n);
  }
  std::vector<OwnedRange> out(params.size());
  for (const auto& group : assign_buffers(params, all_numels, zero_stage, p.zero3_persist_below)) {
    if (group.empty()) continue;
    std::vector<int64_t> numels;
    for (size_t i : group) numels.push_back(all_numels[i]);
    const BucketLayout layout(numels, p.bucket_size, dp);
    for (size_t k = 0; k < group.size(); ++k) {
      const ParamPlace& place = layout.places()[k];
      const Bucket& bucket = layout.buckets()[place.bucket];
      const Range domain = zero_stage == 0 ? Range{bucket.offset, bucket.offset + bucket.numel}
                                           : layout.shard(place.bucket, dp_rank);
      const Range part = layout.param_part(k, domain);
      if (part.size() > 0) out[group[k]] = {part.begin - place.offset, part.size()};
    }
  }
  return out;
}

}  // namespace trident::checkpoint
