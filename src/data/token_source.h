// The trainer's view of data: any sequence of any step's global batch, by index, from
// a synthetic Markov chain or a memory-mapped token file. Step s's data is a pure
// function of (seed, s), so dp ranks and micro-batches just pick indices.
#pragma once

#include <cstdint>   // int32_t, int64_t, uint64_t
#include <memory>    // std::unique_ptr
#include <optional>  // std::optional
#include <string>    // std::string

#include "data/data_error.h"  // DataError

namespace trident::data {

/// A source of token sequences. A step's global batch is G sequences indexed 0..G-1;
/// each is a pure function of (seed, step, index), so any subset can be produced alone.
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  /// Writes the `length` tokens of sequence `index` of step `step`'s global batch.
  virtual void sequence(int64_t step, int64_t index, int64_t length, int32_t* out) const = 0;
  /// The best achievable mean loss (nats) if known (synthetic: the entropy rate).
  virtual std::optional<double> loss_floor() const = 0;
  /// One line for the log, e.g. "llm.c shard data/x.bin: 1,234,567 tokens".
  virtual std::string describe() const = 0;
};

/// What open_source needs from the config.
struct SourceOptions {
  std::string source;             ///< "synthetic" or a path to a token file
  int64_t vocab = 0;              ///< model.vocab: every token id must be below it
  int64_t seq_len = 0;            ///< T: a sequence holds T+1 tokens (inputs and targets)
  uint64_t seed = 0;              ///< the data seed
  int64_t markov_successors = 8;  ///< data.markov_successors (synthetic only)
};

/// Opens the source and validates it completely (for a file: format, sizes, length of at
/// least seq_len+1 tokens, every token id < vocab, by one scan). Throws DataError with a
/// message naming the file and the fix.
std::unique_ptr<TokenSource> open_source(const SourceOptions& options);

/// Fills `out` (count × (seq_len+1) tokens, row-major) with sequences
/// [first, first+count) of step `step`.
void fill_batch(const TokenSource& source, int64_t step, int64_t first, int64_t count,
                int64_t seq_len, int32_t* out);

/// The counter-RNG key of sequence `index` of step `step`: Philox keyed by
/// hash_name(seed, "data.sequence") applied to the 128-bit counter (step, index).
uint64_t sequence_key(uint64_t seed, int64_t step, int64_t index);

}  // namespace trident::data
