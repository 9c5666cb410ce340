// The byte tokenizer and the factory that picks a tokenizer from prepare-data's options.
#include "data/tokenizer.h"

#include "data/bpe.h"         // ByteLevelBpe
#include "data/data_error.h"  // DataError

namespace trident::data {

std::vector<int32_t> Tokenizer::encode(std::string_view text) const {
  std::vector<int32_t> out;
  encode_prefix(text, /*at_end=*/true, out);
  return out;
}

size_t ByteTokenizer::encode_prefix(std::string_view text, bool /*at_end*/,
                                    std::vector<int32_t>& out) const {
  // Bytes are independent of what follows: every prefix is final.
  for (char c : text) out.push_back(static_cast<unsigned char>(c));
  return text.size();
}

std::string ByteTokenizer::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  text.reserve(ids.size());
  for (int32_t id : ids) {
    if (id < 0 || id > 255)
      throw DataError("token id " + std::to_string(id) +
                      " is not a byte; the byte tokenizer has ids 0-255");
    text += static_cast<char>(id);
  }
  return text;
}

std::unique_ptr<Tokenizer> make_tokenizer(const TokenizerOptions& options) {
  const bool has_files = !options.vocab_path.empty() || !options.merges_path.empty();
  if (options.kind == "byte") {
    if (has_files)
      throw DataError(
          "--vocab and --merges are for --tokenizer gpt2; the byte tokenizer "
          "needs no files (drop them, or use --tokenizer gpt2)");
    return std::make_unique<ByteTokenizer>();
  }
  if (options.kind == "gpt2") {
    if (options.vocab_path.empty() || options.merges_path.empty())
      throw DataError(
          "--tokenizer gpt2 needs --vocab vocab.json and --merges merges.txt "
          "(the files of GPT-2's tokenizer from Hugging Face)");
    return std::make_unique<ByteLevelBpe>(
        ByteLevelBpe::load(options.vocab_path, options.merges_path));
  }
  throw DataError("unknown tokenizer '" + options.kind + "'; use --tokenizer byte or gpt2");
}

}  // namespace trident::data
