// The fixed set of sequences a run evaluates on: windows spread evenly over the training
// files' held-out part (data.valid_fraction) or over separate evaluation files, split
// across a mixture's sources by weight; for synthetic data, fresh draws of the chain.
#pragma once

#include <cstdint>  // int32_t, int64_t
#include <memory>   // std::shared_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include "data/token_source.h"  // SourceOptions, MixEntry

namespace trident::data {

class MarkovChain;
struct SourceFile;

/// Where evaluation sequence i comes from.
struct EvalSequence {
  int source;      ///< index into source_names()
  int64_t offset;  ///< the first token's position in the file; -1 for synthetic data
};

/// What open_eval_set needs (data/data_config.h fills it from a TrainConfig).
struct EvalSetOptions {
  SourceOptions train;        ///< the training data: its held-out windows, or its chain
  std::string source;         ///< eval.source: a token file; empty: see `mix`
  std::vector<MixEntry> mix;  ///< eval.mix; both empty: the training data's held-out part
  int64_t sequences = 0;      ///< eval.sequences; 0 gives an empty set
};

/// A fixed list of evaluation sequences of T+1 tokens; the same for every layout and at
/// every evaluation. Copies share the open files. Thread-safe to read.
class EvalSet {
 public:
  EvalSet() = default;  ///< the empty set (no evaluation)

  /// The number of sequences.
  int64_t size() const { return static_cast<int64_t>(sequences_.size()); }
  /// Writes the first `length` tokens of sequence i (length <= seq_len + 1).
  void sequence(int64_t i, int64_t length, int32_t* out) const;
  /// The source of sequence i (an index into source_names()).
  int source_of(int64_t i) const { return at(i).source; }
  /// Where sequence i comes from.
  const EvalSequence& at(int64_t i) const;
  /// The sources' names, in index order.
  const std::vector<std::string>& source_names() const { return names_; }
  /// One line for the log: "64 sequences: 45 of web, 19 of code (held-out windows)".
  std::string describe() const;

 private:
  friend EvalSet open_eval_set(const EvalSetOptions& options);

  std::vector<EvalSequence> sequences_;
  std::vector<std::string> names_;
  std::shared_ptr<const std::vector<SourceFile>> files_;  // token files, by source
  std::shared_ptr<const MarkovChain> chain_;              // synthetic data
  uint64_t seed_ = 0;
  std::string origin_;  // "held-out windows" or "eval.source"
};

/// Builds the set: eval.sequences sequences, sequence i assigned to a source by the
/// mixture rule (n = i); source k's j-th of its S_k sequences is window
/// first + floor(j * count / S_k) of its `count` evaluation windows. Throws DataError
/// naming the key and file: a missing or bad file, a token >= vocab, an evaluation file
/// that is also a training file, fewer windows than sequences asked of a source, or token
/// files without held-out windows or eval.source.
EvalSet open_eval_set(const EvalSetOptions& options);

}  // namespace trident::data
