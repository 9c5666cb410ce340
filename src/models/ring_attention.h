// Ring attention (context parallelism): causal attention over a sequence split among the
// ranks of a cp group, each holding its two balanced chunks (models/context_split.h). The
// keys and values go once around the ring; each rank merges its queries' partial results by
// the log-sum-exp rule (online softmax), and in backward the key and value gradients travel
// around the ring with them, arriving home summed over every rank's queries. Each next
// transfer is posted before the current block is computed.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

namespace trident {
class Communicator;

/// softmax(q k^T / sqrt(head_dim) + causal mask) v for this rank's queries against the
/// whole sequence's keys and values. q (B, H, n, d): this rank's n = seq_len / cp tokens;
/// k, v (B, Hkv, n, d), H a multiple of Hkv (query head j reads kv head j / (H / Hkv)):
/// only the kv heads travel. Returns (B, H, n, d), equal up to summation order to the rows
/// of full causal attention for these tokens. Keeps q, k, v, the output and the row
/// log-sum-exps for backward, never a score matrix.
at::Tensor ring_attention(const at::Tensor& q, const at::Tensor& k, const at::Tensor& v,
                          Communicator& cp);

}  // namespace trident
