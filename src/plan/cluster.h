// A cluster as the planner sees it: devices per node, memory and matmul rate per device,
// link bandwidths and latency. Read from a TOML cluster file or a preset name, and
// written back as TOML (what `trident calibrate` produces).
#pragma once
#include <map>     // std::map
#include <string>  // std::string
#include <vector>  // std::vector

#include "config/input_error.h"  // InputError

namespace trident::plan {

struct Cluster {
  std::string name = "cluster";
  std::string description;  ///< one line for tables; from the file's `description`
  int devices_per_node = 8;
  /// CPU clusters: the cores a node's ranks share (0: every device computes on its own).
  /// With more ranks than cores on a node, compute is time-shared.
  int cores_per_node = 0;
  /// Emulated nodes on one machine (scripts/cluster.sh): the cores every rank of the job
  /// shares, whatever its node; replaces cores_per_node when set (0: nodes have their own).
  int machine_cores = 0;
  /// How the launcher assigns ranks to nodes: "block" (consecutive ranks fill a node:
  /// mpirun --map-by slot, Slurm's block distribution) or "cyclic" (round robin over the
  /// nodes: --map-by node), which puts consecutive ranks, and so tp groups, on different
  /// nodes.
  std::string placement = "block";
  /// What carries the collectives: "nccl" (GPUs; the planner takes the fastest of ring,
  /// Rabenseifner and recursive doubling, as NCCL picks ring or tree) or "mpi" (trident's
  /// MPI communicator on Open MPI: binomial all-reduce, ring reduce-scatter, libnbc's
  /// linear all-gather). `trident calibrate` writes "mpi".
  std::string collectives = "nccl";
  double memory_per_device_gb = 80;     ///< 1e9 bytes
  double usable_memory_fraction = 1.0;  ///< what the allocator, context and fragmentation leave
  /// Dense matmul peak in TFLOP/s per precision ("bf16", "fp32", "fp64").
  std::map<std::string, double> peak_tflops;
  /// Measured matmul rate by square size n (n x n times n x n) per precision, TFLOP/s;
  /// when present it replaces peak_tflops * efficiency (interpolated at the model's size).
  std::map<std::string, std::map<int, double>> matmul_tflops;
  /// Measured seconds per point-to-point message by its bytes, for links within a node; when
  /// present it replaces intra_node_gbps and latency_us there. TOML: [sendrecv_us].
  std::map<double, double> sendrecv_seconds;
  /// The same for links between nodes: an exchange, a message each way at once, as a
  /// ring's rounds send. TOML: [inter_sendrecv_us].
  std::map<double, double> inter_sendrecv_seconds;
  /// Measured seconds of a message one way between nodes (the receiver then answers with
  /// one byte), every rank of a node sending across at once: a round of a binomial
  /// collective or a pipeline send. On a shaped TCP link it takes about half an exchange,
  /// whose acknowledgements queue behind the other direction's data. When present it prices
  /// those messages instead of inter_sendrecv_us. TOML: [inter_send_us].
  std::map<double, double> inter_send_seconds;
  /// Measured seconds of a ring's step between nodes with one stream leaving each node:
  /// every rank sends to the next of a ring through the nodes in order and receives from
  /// the previous, all at once. A ring whose groups put k of a node's P ranks on its link
  /// lies between this (k = 1) and inter_sendrecv_us (k = P). TOML: [inter_ring_us].
  std::map<double, double> inter_ring_seconds;
  /// Ranks computing at once slow each other beyond sharing the cores (memory bandwidth,
  /// caches, switching): the factor on compute by the number of ranks computing at once on
  /// a machine (or node), measured by `trident calibrate` as a block's time with that many
  /// ranks running it over its time alone, divided by their share of the cores.
  /// Interpolated; 1 below the table's first entry. TOML: [contention].
  std::map<double, double> contention;
  /// The factor `contention` gives for `ranks` computing at once.
  double contention_at(double ranks) const;
  double efficiency = 0.6;           ///< fraction of peak large matmuls reach
  double intra_node_gbps = 300;      ///< GB/s one device sends to another in its node
  double inter_node_gbps = 50;       ///< GB/s one device sends to a device in another node
  double latency_us = 5;             ///< per message, both kinds of link
  double inter_node_latency_us = 0;  ///< per message between nodes; 0: latency_us
  /// Extra wait per collective or send when the ranks compute in between: they arrive
  /// out of step (cores shared with other ranks or processes, OS jitter). Its fixed part;
  /// the tp collectives add sync_fraction. Measured by `trident calibrate`, over the ranks
  /// per core; 0 for dedicated devices.
  double sync_us = 0;
  /// The part of a tp collective's wait which grows with the compute since the previous
  /// one: the ranks' compute drifts apart by this fraction of its length (for 2 ranks; a
  /// larger group waits for the slowest of more). Measured by `trident calibrate`, over
  /// the ranks per core as sync_us; 0: none.
  double sync_fraction = 0;
  /// What one transfer of ring attention (context parallelism) costs the step beyond its
  /// message: each step of the ring waits for its neighbour's block, and on shared cores
  /// for the neighbour to be scheduled at all. Measured by `trident calibrate` on a cp-2
  /// block against the whole-sequence block of as many tokens; 0: sync_us is used.
  double ring_sync_us = 0;
  double memory_gbps = 0;  ///< device memory bandwidth, GB/s; 0: elementwise work ignored
  /// What a weight costs each micro-batch beyond its FLOPs, as a rate over its bytes, GB/s:
  /// the BLAS packs the weight for the forward's and the input gradient's products, and
  /// the weight gradient is written and added to the accumulated one, whatever the tokens.
  /// `trident calibrate` measures it as the intercept of a chain of linear layers' forward
  /// and backward over the token count. 0: not charged.
  double weight_gbps = 0;
  /// Nanoseconds trident's AdamW update (zero/zero_step.cpp: the decoupled decay, the
  /// scaled gradient, both moments, the denominator and the update, over chunks that stay
  /// in cache) takes per element of an fp32 shard in memory, every rank at once, as
  /// `trident calibrate` times it on a shard larger than the caches. 0: not measured, the
  /// step priced as 25 passes over the shard at memory_gbps.
  double adamw_ns_per_element = 0;
  /// The nvme tier's disk: sequential O_DIRECT bandwidth per device, GB/s (trident
  /// calibrate measures it: the mean of its write and read); 0: the tier's traffic is not
  /// modelled.
  double disk_gbps = 0;
  /// The same by direction, as calibrate measures them; 0: disk_gbps for that direction.
  double disk_read_gbps = 0, disk_write_gbps = 0;
  /// The rates the tier model uses: each direction's own, else disk_gbps.
  double disk_read() const { return disk_read_gbps > 0 ? disk_read_gbps : disk_gbps; }
  double disk_write() const { return disk_write_gbps > 0 ? disk_write_gbps : disk_gbps; }
  /// The fraction of the tier's transfers that hides behind computation (trident calibrate
  /// measures it: the disk's passes while every rank computes a block); 1: all of it, as
  /// a disk that moves the bytes itself (DMA) does.
  double disk_overlap = 1.0;
  /// Seconds per 1e9 bytes the tier's stream (the AdamW step over the states in the tier)
  /// takes beyond the same step in memory (trident calibrate streams a shard through the
  /// tier's own NvmeTier, every rank at once); negative: not measured, the stream priced
  /// from the disk's rates and disk_overlap.
  double tier_stream_s_per_gb = -1.0;
  /// Resident memory of a training process beyond its model's state, activations and
  /// buffers: the program, libtorch, MPI, the BLAS's buffers (trident calibrate measures
  /// it after a block's forward and backward). With it the planner predicts a CPU rank's
  /// peak RSS; 0: not known.
  double process_base_gb = 0;
  /// Measured effective rate of elementwise work (GB/s of activation bytes streamed) by a
  /// layer's activation bytes per micro-batch; replaces memory_gbps for that work when
  /// present (caches make small layers faster). TOML: [elementwise_gbps].
  std::map<double, double> elementwise_gbps;
  /// The same measured on trident's Llama block (RMSNorm, RoPE, grouped kv heads, SwiGLU),
  /// whose operators stream its activations at other rates than the GPT-2 block's; used
  /// for Llama models when present. TOML: [llama_elementwise_gbps].
  std::map<double, double> llama_elementwise_gbps;
  /// The rate elementwise work streams `bytes` of a layer's activations at, bytes/s: the
  /// Llama table for a Llama layer when measured, else the GPT-2 block's.
  double elementwise_bytes_per_s(double bytes, bool llama = false) const;
  /// Fixed time of one layer's forward + backward for one micro-batch, beyond its FLOPs
  /// and bytes: operator dispatch, kernel launches, autograd bookkeeping.
  double layer_overhead_us = 0;
  /// The same for a Llama layer, which calls more operators (RoPE, the kv heads' repeat,
  /// SwiGLU's third matrix); 0: layer_overhead_us. A tensor-parallel Llama layer costs
  /// layer_overhead_tp_us scaled by this over layer_overhead_us.
  double llama_layer_overhead_us = 0;
  /// The same for a tensor-parallel layer (more operators: the tp regions, sharded QKV),
  /// beyond its all-reduces; 0: as layer_overhead_us.
  double layer_overhead_tp_us = 0;
  /// The same for the model's ends, the embedding and the final norm, head and loss, of
  /// one micro-batch; 0: as two layers.
  double ends_overhead_us = 0;
  /// Fraction of a dp gradient reduce-scatter (ZeRO 1-3) hidden behind backward; also
  /// of ZeRO 3's parameter gathers, the cp ring's transfers and the tier's gradient writes.
  double dp_overlap = 1.0;
  /// The same for ZeRO 0's gradient all-reduce; negative (not given): dp_overlap.
  double all_reduce_overlap = -1.0;
  double all_reduce_overlap_or_dp() const {
    return all_reduce_overlap >= 0 ? all_reduce_overlap : dp_overlap;
  }

  double usable_memory_bytes() const { return memory_per_device_gb * 1e9 * usable_memory_fraction; }
  /// One layer's operator calls per micro-batch, µs: layer_overhead_tp_us for a
  /// tensor-parallel layer (when measured), else layer_overhead_us; for a Llama layer
  /// scaled by llama_layer_overhead_us / layer_overhead_us (when measured).
  double layer_calls_us(bool llama, bool tensor_parallel) const;
  /// The rate a matmul of characteristic size n (cube root of m*n*k) reaches, FLOP/s.
  /// Throws naming the key when the precision has no entry.
  double matmul_flops(const std::string& precision, double n) const;
};

/// A cluster file that is missing, unreadable or has a bad key; the message names it.
class ClusterError : public InputError {
  using InputError::InputError;
};

/// Parses cluster TOML text; `source` names it in messages. Unknown keys are errors.
Cluster parse_cluster(const std::string& toml_text, const std::string& source);

/// Loads `spec`: a path to a TOML file, or a preset name looked up as
/// DIR/<name>.toml in each of `preset_dirs` in turn.
Cluster load_cluster(const std::string& spec, const std::vector<std::string>& preset_dirs);

/// The names of the presets (*.toml) found in `preset_dirs`, sorted, without duplicates.
std::vector<std::string> preset_names(const std::vector<std::string>& preset_dirs);

/// The cluster as TOML text that parse_cluster reads back; `comment` lines go on top.
std::string cluster_to_toml(const Cluster& c, const std::string& comment);

}  // namespace trident::plan
