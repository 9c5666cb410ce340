// The synthetic Markov-chain source, the choice between it and token files, the key of a
// sequence, and batch filling.
#include "data/token_source.h"

#include <cstdio>  // std::snprintf

#include "common/counter_rng.h"  // hash_name, random_u64
#include "data/file_source.h"    // open_file_source
#include "data/markov_chain.h"   // MarkovChain
#include "data/token_file.h"     // format_count

namespace trident::data {
namespace {

/// Sequences sampled from a fixed random Markov chain; each starts from the stationary
/// distribution, so the best mean next-token loss is the chain's entropy rate.
class SyntheticSource : public TokenSource {
 public:
  explicit SyntheticSource(const SourceOptions& o)
      : seed_(o.seed), chain_(o.vocab, o.markov_successors, o.seed) {}

  void sequence(int64_t step, int64_t index, int64_t length, int32_t* out) const override {
    chain_.sample(sequence_key(seed_, step, index), length, out);
  }
  SequenceOrigin origin(int64_t step, int64_t index) const override {
    if (step < 0 || index < 0)
      throw DataError("sequence " + std::to_string(index) + " of data batch " +
                      std::to_string(step) + " does not exist");
    SequenceOrigin o;
    o.name = "synthetic";
    return o;
  }
  std::vector<std::string> source_names() const override { return {"synthetic"}; }
  std::optional<double> loss_floor() const override { return chain_.entropy_rate(); }
  std::string describe() const override {
    char floor[32];
    std::snprintf(floor, sizeof(floor), "%.6f", chain_.entropy_rate());
    return "synthetic Markov chain: vocab " + format_count(chain_.vocab()) + ", " +
           std::to_string(chain_.successors()) + " successors per state, seed " +
           std::to_string(seed_) + "; entropy rate (loss floor) " + floor + " nats";
  }

 private:
  uint64_t seed_;
  MarkovChain chain_;
};

}  // namespace

uint64_t sequence_key(uint64_t seed, int64_t step, int64_t index) {
  return random_u64(hash_name(seed, "data.sequence"), static_cast<uint64_t>(step),
                    static_cast<uint64_t>(index));
}

std::unique_ptr<TokenSource> open_source(const SourceOptions& options) {
  if (options.vocab < 1) {
    throw DataError("model.vocab = " + std::to_string(options.vocab) + " must be positive");
  }
  if (options.seq_len < 1) {
    throw DataError("seq_len = " + std::to_string(options.seq_len) + " must be positive");
  }
  if (!options.mix.empty()) return open_file_source(options);
  if (options.source == "synthetic") return std::make_unique<SyntheticSource>(options);
  if (options.source.empty()) {
    throw DataError("data.source is empty; set it to a token file or to \"synthetic\"");
  }
  return open_file_source(options);
}

void fill_batch(const TokenSource& source, int64_t step, int64_t first, int64_t count,
                int64_t seq_len, int32_t* out) {
  if (step < 0 || first < 0 || count < 0 || seq_len < 1) {
    throw DataError("fill_batch: step " + std::to_string(step) + ", first " +
                    std::to_string(first) + ", count " + std::to_string(count) + ", seq_len " +
                    std::to_string(seq_len) + " must be non-negative (seq_len positive)");
  }
  const int64_t row = seq_len + 1;  // (count, T+1): inputs are [:T], targets [1:]
  for (int64_t k = 0; k < count; ++k) source.sequence(step, first + k, row, out + k * row);
}

}  // namespace trident::data
