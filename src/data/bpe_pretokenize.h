// GPT-2's pre-tokenisation: text is cut into words by the pattern
//   's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
// matched by hand over UTF-8 code points, also on text that arrives in pieces.
#pragma once

#include <cstddef>      // size_t
#include <string_view>  // std::string_view
#include <vector>       // std::vector

namespace trident::data {

/// A word: bytes [begin, end) of the text.
struct WordSpan {
  size_t begin = 0;
  size_t end = 0;
};

/// Appends the words of `text` in order; they cover it without gaps or overlaps, as
/// Python's regex.findall with the pattern above does.
void split_words(std::string_view text, std::vector<WordSpan>& out);

/// Like split_words on a text that may continue beyond `text` unless `at_end`: appends
/// only the words that no continuation can change and returns where they end (the rest
/// must be split again with what follows). Held back: an incomplete UTF-8 sequence at
/// the end, the last word (a run that may go on, whitespace that \s+(?!\S) may split),
/// and a word starting in the last 3 bytes (a contraction such as 're may be cut).
size_t split_stable_words(std::string_view text, bool at_end, std::vector<WordSpan>& out);

}  // namespace trident::data
