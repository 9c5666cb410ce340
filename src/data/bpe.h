// GPT-2's byte-level BPE tokenizer from a Hugging Face vocab.json and merges.txt: words
// from the pre-tokenisation pattern, bytes from the byte-to-unicode alphabet, merges by
// rank, ids from the vocabulary.
#pragma once

#include <array>          // std::array
#include <cstdint>        // int32_t, int64_t, uint64_t
#include <memory>         // std::unique_ptr
#include <optional>       // std::optional
#include <string>         // std::string
#include <string_view>    // std::string_view
#include <unordered_map>  // std::unordered_map
#include <vector>         // std::vector

#include "data/tokenizer.h"  // Tokenizer

namespace trident::data {

/// GPT-2's tokenizer. Immutable after load, except for a cache of encoded words
/// (guarded by a mutex, so encode may be called from several threads).
class ByteLevelBpe final : public Tokenizer {
 public:
  /// Reads `vocab_path` (a JSON object: token in GPT-2's byte alphabet → id) and
  /// `merges_path` (an optional "#version" line, then one "left right" pair per line in
  /// rank order). Throws DataError naming the file, the line and the fix when a file is
  /// missing or malformed, or a merge's parts or result are not in the vocabulary.
  static ByteLevelBpe load(const std::string& vocab_path, const std::string& merges_path);

  ByteLevelBpe(ByteLevelBpe&&) noexcept;
  ByteLevelBpe& operator=(ByteLevelBpe&&) noexcept;
  ~ByteLevelBpe() override;

  /// "GPT-2 BPE (vocab.json: 50,257 tokens, merges.txt: 50,000 merges)".
  std::string describe() const override;
  int64_t vocab_size() const override { return static_cast<int64_t>(bytes_of_id_.size()); }
  /// The id of "<|endoftext|>" if vocab.json has it.
  std::optional<int32_t> end_of_text() const override { return end_of_text_; }
  /// Encodes whole words only: the ones split_stable_words says are final.
  size_t encode_prefix(std::string_view text, bool at_end,
                       std::vector<int32_t>& out) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;

  /// The token as vocab.json writes it ("Ġthe"), for messages.
  std::string token_text(int32_t id) const;
  /// The number of merges.
  int64_t merge_count() const { return static_cast<int64_t>(merges_.size()); }
  const std::string& vocab_path() const { return vocab_path_; }

 private:
  struct Merge {
    int32_t rank;    // the line's position among the merges: lower merges first
    int32_t result;  // the id of the merged token
  };
  struct WordCache;

  ByteLevelBpe();
  static uint64_t pair_key(int32_t left, int32_t right) {
    return (static_cast<uint64_t>(static_cast<uint32_t>(left)) << 32) |
           static_cast<uint32_t>(right);
  }
  void read_vocab(const std::string& path);
  void read_merges(const std::string& path);
  /// The tokens of one word, from its bytes by merges of the lowest rank first.
  std::vector<int32_t> encode_word(std::string_view word) const;

  std::string vocab_path_, merges_path_;
  std::vector<std::string> bytes_of_id_;  // raw bytes of each id; holes are empty
  std::vector<bool> has_id_;              // whether vocab.json defines the id
  std::unordered_map<std::string, int32_t> id_of_bytes_;
  std::array<int32_t, 256> byte_id_{};          // the single-byte tokens; -1 where missing
  std::unordered_map<uint64_t, Merge> merges_;  // (left, right) ids → merge
  std::optional<int32_t> end_of_text_;
  std::unique_ptr<WordCache> cache_;
};

}  // namespace trident::data
