// The storing rule and the ZeRO ownership arithmetic (mirrors ZeroOptimizer's grouping).
#include "checkpoint/ownership.h"

#include "zero/bucket_layout.h"  // BucketLayout, Range

namespace trident::checkpoint {

bool stores_param(const ParamSpec& spec, int tp_rank, int dp_rank, int zero_stage) {
  if (spec.tied_copy) return false;
  if (!is_primary_copy(spec.shard, tp_rank)) return false;
  if (zero_stage == 0 && dp_rank != 0) return false;
  return true;
}

std::vector<OwnedRange> zero_owned_ranges(const std::vector<Parameter>& params, int zero_stage,
                                          int dp, int dp_rank, int64_t bucket_size) {
  // Group 0: the tied token embedding alone; group 1: everything else (as ZeroOptimizer).
  std::vector<size_t> groups[2];
  for (size_t i = 0; i < params.size(); ++i) {
    const ParamSpec& s = params[i].spec;
    groups[s.tied_copy || s.name == "wte.weight" ? 0 : 1].push_back(i);
  }
  std::vector<OwnedRange> out(params.size());
  for (const auto& group : groups) {
    if (group.empty()) continue;
    std::vector<int64_t> numels;
    for (size_t i : group) numels.push_back(params[i].tensor.numel());
    const BucketLayout layout(numels, bucket_size, dp);
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
