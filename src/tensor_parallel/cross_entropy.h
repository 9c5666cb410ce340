// Cross-entropy over vocabulary-parallel logits: each tp rank holds a slice of the
// vocabulary's logits, and only per-token scalars (max, sum of exponentials, the target's
// logit) cross the tp group — the full logits are never gathered.
#pragma once
#include <ATen/core/Tensor.h>  // at::Tensor

namespace trident {
class Communicator;

/// logits (N, V/tp): this rank's columns [vocab_start, vocab_start + V/tp) of the padded
/// vocabulary; columns at and beyond `vocab` are padding and take no probability.
/// targets (N) int64 global ids; a negative target is left out (its loss 0, its logits no
/// gradient). Returns the per-token loss (N), in float32 or wider.
/// `reentrant`: the graph's backward may run more than once (a zero-bubble schedule's input
/// half, then its weight half), so the backward copies the saved softmax rather than
/// turning it into the gradient in place.
at::Tensor vocab_parallel_cross_entropy(const at::Tensor& logits, const at::Tensor& targets,
                                        Communicator& tp, int64_t vocab_start, int64_t vocab,
                                        bool reentrant = false);

}  // namespace trident
