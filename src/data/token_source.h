// The trainer's view of data: any sequence of any step's global batch, by index, from
// a synthetic Markov chain or token files (one, or a weighted mixture). A data batch is a
// pure function of (seed, batch), so dp ranks and micro-batches just pick indices.
#pragma once

#include <cstdint>   // int32_t, int64_t, uint64_t
#include <memory>    // std::unique_ptr
#include <optional>  // std::optional
#include <string>    // std::string
#include <vector>    // std::vector

#include "config/choices.h"   // DataOrder (the enum only)
#include "data/data_error.h"  // DataError

namespace trident::data {

/// Where one sequence of a batch comes from (what `trident batch` prints).
struct SequenceOrigin {
  int source = 0;             ///< index of its source (the order of data.mix)
  std::string name;           ///< the source's name ("synthetic" for the Markov chain)
  int64_t epoch = 0;          ///< passes over the source's training windows before it
  double epoch_fraction = 0;  ///< j / W: epochs of the source read so far, this one included
  int64_t window = -1;        ///< non-overlapping window index (epochs order); -1 otherwise
  int64_t offset = -1;        ///< the first token's position in the file; -1 for synthetic
};

/// A source of token sequences. A data batch is G sequences indexed 0..G-1; each is a pure
/// function of (seed, batch, index), so any subset can be produced alone. `step` below is
/// the 0-based data batch (the trainer passes data_batch_of_step(...) - 1).
class TokenSource {
 public:
  virtual ~TokenSource() = default;
  /// Writes the `length` tokens of sequence `index` of data batch `step`.
  virtual void sequence(int64_t step, int64_t index, int64_t length, int32_t* out) const = 0;
  /// Which source, epoch, window and file offset sequence `index` of `step` comes from.
  virtual SequenceOrigin origin(int64_t step, int64_t index) const = 0;
  /// The sources' names, in source index order ({"synthetic"} for the Markov chain).
  virtual std::vector<std::string> source_names() const = 0;
  /// The best achievable mean loss (nats) if known (synthetic: the entropy rate).
  virtual std::optional<double> loss_floor() const = 0;
  /// One line for the log, e.g. "llm.c shard data/x.bin: 1,234,567 tokens".
  virtual std::string describe() const = 0;
};

/// One file of a mixture.
struct MixEntry {
  std::string path;   ///< the token file
  double weight = 1;  ///< its share of the sequences, relative to the others
  std::string name;   ///< its name in logs and metrics (unique within the mixture)
  std::string key;    ///< the config key messages name, e.g. "data.mix[1]"
};

/// What open_source needs from the config (data/data_config.h fills it from a TrainConfig).
struct SourceOptions {
  std::string source;                    ///< "synthetic" or a token file (when `mix` is empty)
  int64_t vocab = 0;                     ///< model.vocab: every token id must be below it
  int64_t seq_len = 0;                   ///< T: a sequence holds T+1 tokens (inputs and targets)
  uint64_t seed = 0;                     ///< the data seed
  int64_t markov_successors = 8;         ///< data.markov_successors (synthetic only)
  std::vector<MixEntry> mix;             ///< the files of a mixture; empty: `source` alone
  DataOrder order = DataOrder::kEpochs;  ///< epochs of permuted windows, or draws
  double valid_fraction = 0;  ///< the last fraction of each file's windows, never trained on
  int64_t global_batch = 0;   ///< G: sequences per data batch (token files need it)
};

/// Opens the source and validates it completely (for each file: format, sizes, at least
/// one training window, every token id < vocab, by one scan). Throws DataError with a
/// message naming the config key, the file and the fix.
std::unique_ptr<TokenSource> open_source(const SourceOptions& options);

/// Fills `out` (count × (seq_len+1) tokens, row-major) with sequences
/// [first, first+count) of data batch `step`.
void fill_batch(const TokenSource& source, int64_t step, int64_t first, int64_t count,
                int64_t seq_len, int32_t* out);

/// The counter-RNG key of sequence `index` of data batch `step`: Philox keyed by
/// hash_name(seed, "data.sequence") applied to the 128-bit counter (step, index).
uint64_t sequence_key(uint64_t seed, int64_t step, int64_t index);

}  // namespace trident::data
