// GPT-2's BPE encoding: each word's bytes become single-byte tokens, then the pair of
// lowest merge rank is merged everywhere in the word until no pair has a merge
// (encoder.py's bpe()); encoded words are cached.
#include "data/bpe.h"

#include <limits>  // std::numeric_limits
#include <mutex>   // std::mutex, std::lock_guard

#include "data/bpe_alphabet.h"     // byte_to_char, bytes_to_alphabet
#include "data/bpe_pretokenize.h"  // split_stable_words, WordSpan
#include "data/bpe_unicode.h"      // encode_utf8
#include "data/data_error.h"       // DataError
#include "data/token_file.h"       // format_count

namespace trident::data {
namespace {

/// Words up to this many bytes are cached; the cache is emptied when it holds kMaxWords.
constexpr size_t kMaxCachedWordBytes = 64;
constexpr size_t kMaxCachedWords = size_t{1} << 18;

char hex_digit(int v) { return "0123456789ABCDEF"[v & 15]; }

}  // namespace

struct ByteLevelBpe::WordCache {
  std::mutex mutex;
  std::unordered_map<std::string, std::vector<int32_t>> words;
};

ByteLevelBpe::ByteLevelBpe() : cache_(std::make_unique<WordCache>()) { byte_id_.fill(-1); }
ByteLevelBpe::ByteLevelBpe(ByteLevelBpe&&) noexcept = default;
ByteLevelBpe& ByteLevelBpe::operator=(ByteLevelBpe&&) noexcept = default;
ByteLevelBpe::~ByteLevelBpe() = default;

std::string ByteLevelBpe::describe() const {
  int64_t tokens = 0;
  for (bool has : has_id_) tokens += has;
  return "GPT-2 BPE (" + vocab_path_ + ": " + format_count(tokens) + " tokens, " + merges_path_ +
         ": " + format_count(merge_count()) + " merges)";
}

std::vector<int32_t> ByteLevelBpe::encode_word(std::string_view word) const {
  std::vector<int32_t> symbols;
  symbols.reserve(word.size());
  for (char c : word) {
    const auto byte = static_cast<unsigned char>(c);
    if (byte_id_[byte] < 0)
      throw DataError("vocab file " + vocab_path_ + " has no token for byte 0x" +
                      hex_digit(byte >> 4) + hex_digit(byte) + " ('" +
                      encode_utf8(byte_to_char(byte)) +
                      "' in GPT-2's alphabet); a byte-level "
                      "vocabulary needs all 256 single-byte tokens");
    symbols.push_back(byte_id_[byte]);
  }
  std::vector<int32_t> next;
  while (symbols.size() > 1) {
    // The pair of lowest rank ...
    Merge best{std::numeric_limits<int32_t>::max(), -1};
    int32_t left = -1, right = -1;
    for (size_t i = 0; i + 1 < symbols.size(); ++i) {
      const auto it = merges_.find(pair_key(symbols[i], symbols[i + 1]));
      if (it != merges_.end() && it->second.rank < best.rank) {
        best = it->second;
        left = symbols[i];
        right = symbols[i + 1];
      }
    }
    if (best.result < 0) break;
    // ... is merged at each of its occurrences, left to right.
    next.clear();
    for (size_t i = 0; i < symbols.size(); ++i) {
      if (i + 1 < symbols.size() && symbols[i] == left && symbols[i + 1] == right) {
        next.push_back(best.result);
        ++i;
      } else {
        next.push_back(symbols[i]);
      }
    }
    symbols.swap(next);
  }
  return symbols;
}

size_t ByteLevelBpe::encode_prefix(std::string_view text, bool at_end,
                                   std::vector<int32_t>& out) const {
  std::vector<WordSpan> words;
  const size_t end = split_stable_words(text, at_end, words);
  std::lock_guard<std::mutex> lock(cache_->mutex);
  for (const WordSpan& span : words) {
    const std::string_view word = text.substr(span.begin, span.end - span.begin);
    if (word.size() > kMaxCachedWordBytes) {
      const std::vector<int32_t> ids = encode_word(word);
      out.insert(out.end(), ids.begin(), ids.end());
      continue;
    }
    std::string key(word);
    auto it = cache_->words.find(key);
    if (it == cache_->words.end()) {
      if (cache_->words.size() >= kMaxCachedWords) cache_->words.clear();
      it = cache_->words.emplace(std::move(key), encode_word(word)).first;
    }
    out.insert(out.end(), it->second.begin(), it->second.end());
  }
  return end;
}

std::string ByteLevelBpe::decode(const std::vector<int32_t>& ids) const {
  std::string text;
  for (int32_t id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= has_id_.size() || !has_id_[id])
      throw DataError("token id " + std::to_string(id) + " is not in vocab file " + vocab_path_);
    text += bytes_of_id_[id];
  }
  return text;
}

std::string ByteLevelBpe::token_text(int32_t id) const {
  if (id < 0 || static_cast<size_t>(id) >= has_id_.size() || !has_id_[id])
    return "<id " + std::to_string(id) + ">";
  return bytes_to_alphabet(bytes_of_id_[id]);
}

}  // namespace trident::data
