// GPT-2's pre-tokenisation pattern, one alternative at a time in the pattern's order,
// and the rule that decides which words of a partial text are final.
#include "data/bpe_pretokenize.h"

#include "data/bpe_unicode.h"  // decode_utf8, char_class, incomplete_utf8_tail

namespace trident::data {
namespace {

/// The longest contraction the pattern knows ('re, 've, 'll), in bytes.
constexpr size_t kContractionLookahead = 3;

CharClass class_at(std::string_view text, size_t pos, size_t* bytes = nullptr) {
  const DecodedChar d = decode_utf8(text, pos);
  if (bytes) *bytes = d.bytes;
  return char_class(d.code_point);
}

/// 's|'t|'re|'ve|'m|'ll|'d at `pos` (case-sensitive, as in GPT-2): its length, or 0.
size_t contraction_length(std::string_view text, size_t pos) {
  if (text[pos] != '\'') return 0;
  const std::string_view rest = text.substr(pos + 1);
  for (std::string_view c : {"s", "t", "m", "d"})
    if (rest.substr(0, 1) == c) return 2;
  for (std::string_view c : {"re", "ve", "ll"})
    if (rest.substr(0, 2) == c) return 3;
  return 0;
}

/// The end of the run of class `cls` that starts at `pos`.
size_t run_end(std::string_view text, size_t pos, CharClass cls) {
  size_t bytes = 0;
  while (pos < text.size() && class_at(text, pos, &bytes) == cls) pos += bytes;
  return pos;
}

/// The end of the word that starts at `pos`: the first alternative of the pattern that
/// matches there, taken as the regex engine takes it.
size_t word_end(std::string_view text, size_t pos) {
  if (size_t n = contraction_length(text, pos)) return pos + n;
  size_t bytes = 0;
  CharClass cls = class_at(text, pos, &bytes);
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: a space joins the run after it.
  if (text[pos] == ' ' && pos + 1 < text.size()) {
    const CharClass next = class_at(text, pos + 1);
    if (next != CharClass::kSpace) return run_end(text, pos + 1, next);
  }
  if (cls != CharClass::kSpace) return run_end(text, pos, cls);
  // `\s+(?!\S)` then `\s+`: a whitespace run that reaches the end of the text is one
  // word; otherwise its last character is left to start the next word, unless it is
  // the only one.
  size_t last = pos, end = pos;
  while (end < text.size() && class_at(text, end, &bytes) == CharClass::kSpace) {
    last = end;
    end += bytes;
  }
  if (end == text.size() || last == pos) return end;
  return last;
}

}  // namespace

void split_words(std::string_view text, std::vector<WordSpan>& out) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = word_end(text, pos);
    out.push_back({pos, end});
    pos = end;
  }
}

size_t split_stable_words(std::string_view text, bool at_end, std::vector<WordSpan>& out) {
  if (at_end) {
    split_words(text, out);
    return text.size();
  }
  const std::string_view complete = text.substr(0, text.size() - incomplete_utf8_tail(text));
  const size_t first = out.size();
  split_words(complete, out);
  if (out.size() == first) return 0;
  // Hold the last word, and every word that starts too close to the end for its
  // contraction test to have seen the characters it needs.
  size_t keep = out.size() - 1;
  while (keep > first && out[keep - 1].begin + kContractionLookahead > complete.size()) --keep;
  const size_t stable_end = out[keep].begin;
  out.resize(keep);
  return stable_end;
}

}  // namespace trident::data
