// Communicator: one interface for the collectives and point-to-point operations of a
// process group, asynchronous by default (each call returns a Work handle), with byte and
// time counters per kind of operation. The MPI backend serves CPU tensors, the NCCL
// backend CUDA tensors (and hands host tensors to the group's MPI communicator), and the
// local backend a group of one process in a build without MPI.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

#include <array>
#include <chrono>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace trident {

enum class ReduceOp { kSum, kAverage, kMax };

/// A timeout that never expires: for agreement at start-up, where one rank may
/// legitimately read or parse for a long time while the others wait.
constexpr double kWaitForever = std::numeric_limits<double>::infinity();

/// The kinds of operation the counters distinguish.
enum class CommKind {
  kAllReduce,
  kReduceScatter,
  kAllGather,
  kBroadcast,
  kSend,
  kRecv,
  kBarrier,
  kGather,
  kAllToAll
};
constexpr int kNumCommKinds = 9;
const char* comm_kind_name(CommKind kind);

/// Checks an all_to_all's tensors and counts against each other and the group's size (a
/// message naming what differs) and returns the elements of one row.
int64_t all_to_all_row_elements(const at::Tensor& output, const at::Tensor& input,
                                const std::vector<int64_t>& send_rows,
                                const std::vector<int64_t>& recv_rows, int group_size);

/// What one group has moved: calls, payload bytes (the size of the buffer this rank
/// contributes or receives, before any algorithm-specific factor), wall seconds from
/// posting an operation to its completion, and the seconds the caller spent inside the
/// group's operations — posting, testing, waiting — instead of computing: the
/// communication not hidden behind computation ("exposed").
struct CommCounter {
  int64_t calls = 0;
  int64_t bytes = 0;
  double seconds = 0.0;
  double wait_seconds = 0.0;
};

/// A posted operation. wait() blocks until it completes (or ends the job when the group's
/// timeout passes); it is idempotent.
class Work {
 public:
  virtual ~Work() = default;
  virtual void wait() = 0;
  /// Non-blocking: drives progress and reports whether the operation has completed.
  virtual bool test() = 0;
};
using WorkHandle = std::shared_ptr<Work>;

class Communicator {
 public:
  virtual ~Communicator() = default;

  /// This rank's index in the group, and the group's size.
  virtual int rank() const = 0;
  virtual int size() const = 0;
  /// The group's name, for messages ("tp", "dp", ...), and its world ranks.
  virtual const std::string& name() const = 0;
  virtual const std::vector<int>& world_ranks() const = 0;

  /// In place on a contiguous tensor.
  virtual WorkHandle all_reduce(at::Tensor tensor, ReduceOp op = ReduceOp::kSum) = 0;
  /// `input` holds size() equal chunks; this rank receives the reduction of its chunk.
  virtual WorkHandle reduce_scatter(at::Tensor output, at::Tensor input,
                                    ReduceOp op = ReduceOp::kSum) = 0;
  /// `output` holds size() chunks, chunk r being rank r's `input`.
  virtual WorkHandle all_gather(at::Tensor output, at::Tensor input) = 0;
  virtual WorkHandle broadcast(at::Tensor tensor, int root) = 0;
  /// Point-to-point by group rank; a send meets the receive with the same tag.
  virtual WorkHandle send(at::Tensor tensor, int dst, int tag) = 0;
  virtual WorkHandle recv(at::Tensor tensor, int src, int tag) = 0;
  virtual WorkHandle barrier() = 0;
  /// Rows (slices along dim 0) to and from every rank, counts differing: this rank sends
  /// `send_rows[r]` consecutive rows of `input`, in group-rank order, to rank r, and
  /// receives `recv_rows[r]` rows from rank r into `output`, in group-rank order. Both
  /// tensors contiguous, of one dtype and the same row shape; each rank's recv_rows[r] is
  /// rank r's send_rows for it.
  virtual WorkHandle all_to_all(at::Tensor output, at::Tensor input,
                                const std::vector<int64_t>& send_rows,
                                const std::vector<int64_t>& recv_rows) = 0;

  // Byte strings of any length, for metadata (checkpoint records, trace events, error
  // messages): each call blocks until done and is counted under its kind (a gather as
  // kGather) with the bytes this rank sends or receives.

  /// `root`'s `bytes` on every rank (the other ranks' argument is ignored).
  virtual std::string broadcast_bytes(std::string bytes, int root) = 0;
  /// Every rank's `bytes`, lengths differing, in group-rank order on `root`; empty elsewhere.
  virtual std::vector<std::string> gather_bytes(const std::string& bytes, int root) = 0;
  /// Every rank's `bytes`, lengths differing, in group-rank order on every rank.
  virtual std::vector<std::string> all_gather_bytes(const std::string& bytes) = 0;

  /// The sub-groups of this group: ranks passing the same `color` (>= 0) form a group
  /// named `name`, ordered by `key` (ties by rank), whose waits end the job after
  /// `timeout_s`; a rank passing kNoGroup gets null. Collective over this group.
  static constexpr int kNoGroup = -1;
  virtual std::unique_ptr<Communicator> split(int color, int key, const std::string& name,
                                              double timeout_s) = 0;

  /// Counters, one per kind of operation (a device communicator's include the operations
  /// it passed to its host communicator).
  CommCounter counter(CommKind kind) const;
  void reset_counters();
  int64_t total_bytes() const;
  /// Seconds this rank spent inside the group's operations (posting, testing, waiting).
  double total_wait_seconds() const;

  /// Which node each world rank runs on (its host name), so that the group counts what
  /// this rank sends to other nodes. Unset: nothing crosses.
  void set_nodes(const std::vector<std::string>& node_of_world_rank);
  /// Bytes this rank has sent to ranks on other nodes, as the wire carries them (transport
  /// dtype): exact for point-to-point operations, the ring reduce-scatter and collectives
  /// of two ranks; see cross_node_uncounted().
  int64_t cross_node_bytes() const;
  /// Calls of collectives over more than two ranks spanning nodes, whose traffic depends on
  /// the algorithm MPI picks (in training: a few scalars per step over the world group).
  int64_t cross_node_uncounted() const;
  /// Whether the group has members on more than one node (after set_nodes).
  bool spans_nodes() const { return spans_nodes_; }

 protected:
  /// Counts `bytes` sent to group rank `peer` if it runs on another node.
  void count_sent(int peer, int64_t bytes) {
    if (!off_node_.empty() && off_node_[static_cast<size_t>(peer)]) cross_node_bytes_ += bytes;
  }
  /// A collective in which this rank sends `bytes_if_two` when the group is two ranks.
  void count_collective(int64_t bytes_if_two);
  /// Counts `other`'s operations as this group's own: for a device communicator that hands
  /// host tensors and byte strings to the same group's host communicator, or some messages
  /// to a second channel.
  void count_also(Communicator* other) { also_.push_back(other); }

  std::array<CommCounter, kNumCommKinds> counters_{};

 private:
  std::vector<Communicator*> also_;
  std::vector<bool> off_node_;  // per group rank: on another node than this rank
  bool spans_nodes_ = false;
  int64_t cross_node_bytes_ = 0, cross_node_uncounted_ = 0;
};

}  // namespace trident
