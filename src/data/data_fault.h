// Fault injection for the loss-spike guard's tests: TRIDENT_DATA_FAULT=FIRST-LAST[,...]
// replaces the sequences of those batches of the data stream (1-based) by tokens drawn
// uniformly from the vocabulary, as a corrupted shard of a corpus would look. Unset: nothing.
#pragma once
#include <cstdint>

namespace trident::data {

/// Overwrites `count` sequences of `row` tokens at `tokens` (sequences first, first+1, ...
/// of batch `batch`) when TRIDENT_DATA_FAULT names the batch. The tokens are a function of
/// (batch, sequence, position) alone, so every layout sees the same corrupted batch.
void apply_data_fault(int64_t batch, int64_t first, int64_t count, int64_t row, int64_t vocab,
                      int32_t* tokens);

}  // namespace trident::data
