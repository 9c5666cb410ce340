// The nvme tier's stream as training runs it: trident's NvmeTier reading a shard's planes
// ahead, AdamW updating each piece, the changed planes written behind, timed against the
// same updates in memory.
#pragma once
#include <string>  // std::string

namespace trident {
class Communicator;
}  // namespace trident

namespace trident::calibrate {

/// Seconds per call of one streamed AdamW step over a shard and of the same step in
/// memory, and the bytes the stream reads and writes.
struct TierStream {
  double stream_s = 0, memory_s = 0;
  double bytes = 0;  ///< read and written per stream
  /// Seconds per 1e9 bytes moved that the stream takes beyond the updates in memory
  /// (0 when it takes no longer): Cluster::tier_stream_s_per_gb.
  double s_per_gb() const;
};

/// The shard of an fp32 ZeRO 2 run with its optimizer's states and gradient in the tier:
/// 12 pieces of 4 MiB per plane, both moments and the gradient in a file under `dir`
/// (unlinked at once), the parameters in memory, a ring of 4 buffers as
/// parallel.offload_buffer_count's default; each rank at once, as a node's ranks share
/// its disk. Collective over `world`.
TierStream tier_stream(const std::string& dir, Communicator& world, double budget);

}  // namespace trident::calibrate
