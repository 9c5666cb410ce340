// Bucket assignment, padding and dp shard ranges of a flat buffer.
#include "zero/bucket_layout.h"

#include <algorithm>  // std::max, std::min, std::reverse
#include <stdexcept>  // std::invalid_argument
#include <string>     // std::to_string

namespace trident {

BucketLayout::BucketLayout(const std::vector<int64_t>& numels, int64_t bucket_size, int dp)
    : dp_(dp) {
  if (dp < 1)
    throw std::invalid_argument("bucket layout: dp must be >= 1, got " + std::to_string(dp));
  if (bucket_size < 1)
    throw std::invalid_argument("bucket layout: zero.bucket_size must be >= 1 element, got " +
                                std::to_string(bucket_size));
  // Membership: scan from the last parameter (backward's order), close at bucket_size.
  std::vector<std::vector<size_t>> members;
  int64_t filled = 0;
  for (size_t i = numels.size(); i-- > 0;) {
    if (members.empty() || filled >= bucket_size) {
      members.emplace_back();
      filled = 0;
    }
    members.back().push_back(i);
    filled += numels[i];
  }
  // Offsets: construction order, so the buffer reads like the model; bucket k is placed
  // after bucket k+1, with its padding at its end.
  buckets_.resize(members.size());
  places_.resize(numels.size());
  int64_t offset = 0;
  for (size_t k = members.size(); k-- > 0;) {
    Bucket& b = buckets_[k];
    b.params.assign(members[k].rbegin(), members[k].rend());
    b.offset = offset;
    for (size_t p : b.params) {
      places_[p] = {k, offset, numels[p]};
      offset += numels[p];
      b.data_numel += numels[p];
    }
    b.numel = (b.data_numel + dp - 1) / dp * dp;
    b.shard_numel = b.numel / dp;
    offset = b.offset + b.numel;
    data_numel_ += b.data_numel;
  }
  numel_ = offset;
  int64_t space = 0;
  for (const Bucket& b : buckets_) {
    shard_space_offsets_.push_back(space);
    space += b.shard_numel;
  }
}

int64_t BucketLayout::max_bucket_numel() const {
  int64_t m = 0;
  for (const Bucket& b : buckets_) m = std::max(m, b.numel);
  return m;
}

Range BucketLayout::shard(size_t b, int rank) const {
  const Bucket& bucket = buckets_.at(b);
  const int64_t begin = bucket.offset + rank * bucket.shard_numel;
  return {begin, begin + bucket.shard_numel};
}

Range BucketLayout::param_part(size_t p, Range range) const {
  const ParamPlace& place = places_.at(p);
  const int64_t begin = std::max(place.offset, range.begin);
  const int64_t end = std::min(place.offset + place.numel, range.end);
  return end > begin ? Range{begin, end} : Range{begin, begin};
}

}  // namespace trident
