// Tokenizers that turn text into token ids for prepare-data: the byte tokenizer (one
// token per byte) and GPT-2's byte-level BPE, behind one interface that encodes text
// arriving in pieces exactly as it would encode the whole.
#pragma once

#include <cstddef>      // size_t
#include <cstdint>      // int32_t, int64_t
#include <memory>       // std::unique_ptr
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

namespace trident::data {

/// Text → token ids and back. Encoding is a pure function of the text; implementations
/// are safe to call from several threads at once.
class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  /// One line for the log, e.g. "byte (256 tokens)".
  virtual std::string describe() const = 0;
  /// One more than the largest token id: the smallest model.vocab that fits every token.
  virtual int64_t vocab_size() const = 0;
  /// The token that --append-eot writes after each document, if the tokenizer has one.
  virtual std::optional<int32_t> end_of_text() const = 0;

  /// Encodes the longest prefix of `text` whose tokens cannot change whatever text
  /// follows, appends its tokens to `out` and returns its length in bytes; the caller
  /// passes the rest again with the text that follows. With `at_end`, encodes all of
  /// `text`. Feeding a text in any pieces gives the tokens of the whole text.
  virtual size_t encode_prefix(std::string_view text, bool at_end,
                               std::vector<int32_t>& out) const = 0;
  /// The bytes the tokens stand for; throws DataError on an id outside the vocabulary.
  virtual std::string decode(const std::vector<int32_t>& ids) const = 0;

  /// The tokens of the whole of `text`.
  std::vector<int32_t> encode(std::string_view text) const;
};

/// Byte-level tokens: token i is byte i, vocabulary 256. Its end-of-text token is 0 (the
/// NUL byte, which text files do not contain).
class ByteTokenizer final : public Tokenizer {
 public:
  std::string describe() const override { return "byte (256 tokens)"; }
  int64_t vocab_size() const override { return 256; }
  std::optional<int32_t> end_of_text() const override { return 0; }
  size_t encode_prefix(std::string_view text, bool at_end,
                       std::vector<int32_t>& out) const override;
  std::string decode(const std::vector<int32_t>& ids) const override;
};

/// Which tokenizer to build, as prepare-data's options name it.
struct TokenizerOptions {
  std::string kind;         ///< "byte" or "gpt2"
  std::string vocab_path;   ///< gpt2: Hugging Face vocab.json
  std::string merges_path;  ///< gpt2: Hugging Face merges.txt
};

/// Builds the tokenizer; throws DataError naming the option or file and the fix.
std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerOptions& options);

}  // namespace trident::data
