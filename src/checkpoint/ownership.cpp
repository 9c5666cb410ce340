// The storing rule and the ZeRO ownership arithmetic (mirrors ZeroOptimizer's grouping).
#include "checkpoint/ownership.h"

#include "zero/bucket_layout.h"      // BucketLayout, Range
#include "zero/buffer_assignment.h"  // assign_buffers

namespace trident::checkpoint {

bool stores_param(const ParamSpec& spec, int tp_rank, int dp_rank, int zero_stage, int ep) {
  if (spec.tied_copy) return false;
  if (!is_primary_copy(spec.shard, tp_rank)) return false;
  // Stage 0: the first of the ranks holding the same copy (an expert's expert-dp group).
  if (zero_stage == 0 && (spec.expert ? dp_rank / ep : dp_rank) != 0) return false;
  return true;
}

std::vector<OwnedRange> zero_owned_ranges(const std::vector<Parameter>& params,
                                          const ParallelConfig& p, int dp_rank, bool muon) {
  // ZeRO shards over the dp x cp ranks holding the same slice of the model.
  const int zero_stage = static_cast<int>(p.zero_stage), dp = static_cast<int>(p.dp * p.cp),
            ep = static_cast<int>(p.ep);
  std::vector<int64_t> all_numels;
  for (const Parameter& param : params) {
    int64_t n = 1;
    for (int64_t d : local_shape(param.spec, static_cast<int>(p.tp))) n *= d;
    all_numels.push_back(n);
  }
  std::vector<OwnedRange> out(params.size());
  const auto buffers = assign_buffers(params, all_numels, zero_stage, p.zero3_persist_below, muon);
  for (size_t buffer = 0; buffer < buffers.size(); ++buffer) {
    const auto& group = buffers[buffer];
    if (group.empty()) continue;
    std::vector<int64_t> numels;
    for (size_t i : group) numels.push_back(all_numels[i]);
    // The experts' buffers are cut over their expert-dp group: dp / ep ranks.
    const bool experts = is_expert_buffer(buffer);
    const int ranks = experts ? dp / ep : dp, rank = experts ? dp_rank / ep : dp_rank;
    const BucketLayout layout(numels, p.bucket_size, ranks);
    for (size_t k = 0; k < group.size(); ++k) {
      const ParamPlace& place = layout.places()[k];
      const Bucket& bucket = layout.buckets()[place.bucket];
      const Range domain = zero_stage == 0 ? Range{bucket.offset, bucket.offset + bucket.numel}
                                           : layout.shard(place.bucket, rank);
      const Range part = layout.param_part(k, domain);
      if (part.size() > 0) out[group[k]] = {part.begin - place.offset, part.size()};
    }
  }
  return out;
}

ParallelConfig storage_layout(const ParallelConfig& p) {
  ParallelConfig out;
  out.dp = p.dp;
  out.cp = p.cp;
  out.pp = p.pp;
  out.tp = p.tp;
  out.ep = p.ep;
  out.zero_stage = p.zero_stage;
  out.bucket_size = p.bucket_size;
  out.zero3_persist_below = p.zero3_persist_below;
  return out;
}

}  // namespace trident::checkpoint
