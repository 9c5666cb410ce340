// The arithmetic of a flat buffer: where each parameter sits, how consecutive parameters
// are grouped into buckets (filled from the last parameter, the order backward produces
// gradients), and which slice of every bucket each dp rank owns. No tensors, no MPI.
#pragma once
#include <cstddef>  // size_t
#include <cstdint>  // int64_t
#include <vector>

namespace trident {

/// A run of consecutive parameters reduced by one collective. `numel` includes the padding
/// that makes it a multiple of dp; dp rank r owns [offset + r*shard_numel, +shard_numel).
struct Bucket {
  int64_t offset = 0;          // into the flat buffer
  int64_t numel = 0;           // padded: a multiple of dp
  int64_t data_numel = 0;      // without the padding (at the end of the bucket)
  int64_t shard_numel = 0;     // numel / dp
  std::vector<size_t> params;  // indices of its parameters, ascending
};

/// Where one parameter sits.
struct ParamPlace {
  size_t bucket = 0;
  int64_t offset = 0;  // into the flat buffer
  int64_t numel = 0;
};

/// A half-open range of elements.
struct Range {
  int64_t begin = 0;
  int64_t end = 0;
  int64_t size() const { return end - begin; }
};

/// The layout of one flat buffer. Parameters lie in construction order; buckets are
/// numbered in the order backward completes them (bucket 0 holds the last parameters).
class BucketLayout {
 public:
  /// `numels`: the parameters' element counts in construction order. A bucket closes once
  /// it holds at least `bucket_size` elements; a parameter is never split across buckets.
  BucketLayout(const std::vector<int64_t>& numels, int64_t bucket_size, int dp);
  BucketLayout() = default;  // empty

  int dp() const { return dp_; }
  /// Padded size of the whole buffer, and the parameters' elements without padding.
  int64_t numel() const { return numel_; }
  int64_t data_numel() const { return data_numel_; }
  const std::vector<Bucket>& buckets() const { return buckets_; }
  const std::vector<ParamPlace>& places() const { return places_; }
  int64_t max_bucket_numel() const;

  /// The slice of bucket `b` that dp rank `rank` owns, in buffer coordinates.
  Range shard(size_t b, int rank) const;
  /// The part of parameter `p` inside `range` (buffer coordinates); empty if none.
  Range param_part(size_t p, Range range) const;
  /// The offset of bucket `b`'s shard in the rank's shard space: the concatenation of
  /// its shards of every bucket, in bucket order (sum of shard_numel of buckets before b).
  int64_t shard_space_offset(size_t b) const { return shard_space_offsets_.at(b); }
  /// Total size of the shard space: numel() / dp.
  int64_t shard_space_numel() const { return numel_ / dp_; }

 private:
  int dp_ = 1;
  int64_t numel_ = 0;
  int64_t data_numel_ = 0;
  std::vector<Bucket> buckets_;
  std::vector<ParamPlace> places_;
  std::vector<int64_t> shard_space_offsets_;
};

}  // namespace trident
