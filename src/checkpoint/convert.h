// Conversion of a checkpoint to another layout: a new checkpoint directory with one file
// per rank of the target layout (named by its coordinates) holding exactly what that rank
// would save, and an index. Any number of processes can convert.
#pragma once
#include <cstdint>  // int64_t
#include <string>   // std::string

namespace trident {
class Communicator;
struct TrainConfig;
}  // namespace trident

namespace trident::checkpoint {

/// What a conversion wrote.
struct ConvertSummary {
  int files = 0;
  int64_t bytes = 0;
  std::string out;
};

/// Reads the checkpoint `in` (resolved as checkpoint.load is, in `checkpoint_dir`) and
/// writes it to the new directory `out` re-split for `target`'s layout (parallel.dp, pp,
/// tp, zero_stage, bucket_size); the model of `target` must be the checkpoint's. Target
/// ranks are shared round-robin among the ranks of `comm` (collective over it); the output
/// appears by one rename once complete. Every rank returns the same summary, or throws
/// the same error.
ConvertSummary convert_checkpoint(const std::string& in, const std::string& checkpoint_dir,
                                  const TrainConfig& target, const std::string& out,
                                  Communicator& comm);

}  // namespace trident::checkpoint
