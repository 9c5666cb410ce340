// Tests of GPT-2's pre-tokenisation: hand-written splits of the pattern on spaces,
// punctuation, digits, contractions, Unicode and newlines; the character classes; and
// that text fed in pieces splits exactly as the whole.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <random>       // std::mt19937
#include <string>       // std::string
#include <string_view>  // std::string_view
#include <vector>       // std::vector

#include "data/bpe_pretokenize.h"  // split_words, split_stable_words
#include "data/bpe_unicode.h"      // char_class, decode_utf8, incomplete_utf8_tail

namespace trident::data {
namespace {

std::vector<std::string> words_of(std::string_view text) {
  std::vector<WordSpan> spans;
  split_words(text, spans);
  std::vector<std::string> words;
  for (const WordSpan& s : spans) words.emplace_back(text.substr(s.begin, s.end - s.begin));
  return words;
}

/// The words of `text` when it arrives `piece` bytes at a time.
std::vector<std::string> words_in_pieces(std::string_view text, size_t piece) {
  std::vector<std::string> words;
  std::string window;
  for (size_t fed = 0;;) {
    window += text.substr(fed, piece);
    fed = std::min(text.size(), fed + piece);
    const bool at_end = fed == text.size();
    std::vector<WordSpan> spans;
    const size_t used = split_stable_words(window, at_end, spans);
    for (const WordSpan& s : spans) words.push_back(window.substr(s.begin, s.end - s.begin));
    window.erase(0, used);
    if (at_end) return words;
  }
}

using Words = std::vector<std::string>;

// The expected splits are those of Python's regex.findall with GPT-2's pattern.
TEST(BpePretokenize, spaces_join_the_word_after_them) {
  EXPECT_EQ(words_of("Hello world"), (Words{"Hello", " world"}));
  EXPECT_EQ(words_of("  leading"), (Words{" ", " leading"}));
  EXPECT_EQ(words_of("multiple   spaces"), (Words{"multiple", "  ", " spaces"}));
  EXPECT_EQ(words_of("trailing  "), (Words{"trailing", "  "}));
  EXPECT_EQ(words_of("   "), (Words{"   "}));
  EXPECT_EQ(words_of(""), (Words{}));
}

TEST(BpePretokenize, punctuation_runs_and_digits) {
  EXPECT_EQ(words_of("Hi, there! (ok)?"), (Words{"Hi", ",", " there", "!", " (", "ok", ")?"}));
  EXPECT_EQ(words_of("In 2024, 7 cats"), (Words{"In", " 2024", ",", " 7", " cats"}));
  EXPECT_EQ(words_of("3.14 x10"), (Words{"3", ".", "14", " x", "10"}));
}

TEST(BpePretokenize, contractions_are_lower_case_and_only_at_a_word_start) {
  EXPECT_EQ(words_of("don't we'll I'M"), (Words{"don", "'t", " we", "'ll", " I", "'", "M"}));
  EXPECT_EQ(words_of("'s 'S ''re"), (Words{"'s", " '", "S", " ''", "re"}));
  EXPECT_EQ(words_of("they're I've I'd"), (Words{"they", "'re", " I", "'ve", " I", "'d"}));
}

TEST(BpePretokenize, unicode_letters_numbers_and_symbols) {
  EXPECT_EQ(words_of("café Ωμέγα привет 中文 🙂"),
            (Words{"café", " Ωμέγα", " привет", " 中文", " 🙂"}));
  // A combining accent is a mark, not a letter; a superscript two is a number.
  EXPECT_EQ(words_of("e\u0301 x\u00B2"), (Words{"e", "\u0301", " x", "\u00B2"}));
  EXPECT_EQ(words_of("\u3000x"), (Words{"\u3000", "x"}));  // the ideographic space is \s
}

TEST(BpePretokenize, newlines_and_tabs) {
  EXPECT_EQ(words_of("a\n\nb"), (Words{"a", "\n", "\n", "b"}));
  EXPECT_EQ(words_of("a\n\n\nb"), (Words{"a", "\n\n", "\n", "b"}));
  EXPECT_EQ(words_of("a\n\n"), (Words{"a", "\n\n"}));
  EXPECT_EQ(words_of("x \n y"), (Words{"x", " \n", " y"}));
  EXPECT_EQ(words_of("\t\tx"), (Words{"\t", "\t", "x"}));
}

TEST(BpePretokenize, malformed_utf8_bytes_are_symbols) {
  EXPECT_EQ(words_of("a\xFF\xC3(b"), (Words{"a", "\xFF\xC3(", "b"}));
}

TEST(BpeUnicode, classes_of_common_scripts) {
  auto cls = [](const char* utf8) { return char_class(decode_utf8(utf8, 0).code_point); };
  for (const char* letter : {"a", "Z", "é", "ß", "Ω", "ж", "Ա", "א", "ب", "क", "ก", "ა", "한", "あ",
                             "ア", "中", "Ａ", "ª", "ǅ"})
    EXPECT_EQ(cls(letter), CharClass::kLetter) << letter;
  for (const char* number : {"0", "9", "²", "½", "٣", "४", "Ⅻ", "０", "①"})
    EXPECT_EQ(cls(number), CharClass::kNumber) << number;
  for (const char* space : {" ", "\t", "\n", "\r", "\v", "\f", "\u00A0", "\u2003", "\u3000"})
    EXPECT_EQ(cls(space), CharClass::kSpace);
  for (const char* other : {"!", "'", "\u0301", "€", "🙂", "。", "\x1C"})
    EXPECT_EQ(cls(other), CharClass::kOther) << other;
}

TEST(BpeUnicode, decodes_and_waits_for_incomplete_sequences) {
  EXPECT_EQ(decode_utf8("é", 0).code_point, U'é');
  EXPECT_EQ(decode_utf8("🙂", 0).bytes, 4u);
  EXPECT_EQ(decode_utf8("\xC0\xAF", 0).code_point, kInvalidCodePoint);      // overlong '/'
  EXPECT_EQ(decode_utf8("\xED\xA0\x80", 0).code_point, kInvalidCodePoint);  // surrogate
  EXPECT_EQ(incomplete_utf8_tail("ab\xF0\x9F\x99"), 3u);
  EXPECT_EQ(incomplete_utf8_tail("ab\xC3"), 1u);
  EXPECT_EQ(incomplete_utf8_tail("ab\xC3\xA9"), 0u);
  EXPECT_EQ(incomplete_utf8_tail("ab\xC0"), 0u);      // can never be completed
  EXPECT_EQ(incomplete_utf8_tail("ab\xE0\x80"), 0u);  // overlong whatever follows
}

TEST(BpePretokenize, pieces_split_as_the_whole) {
  const std::string text =
      "don't  stop\n\n\nwe'll 2024 café Ωμέγα 中文🙂🙂 "
      "they're   \t x²! 'S ''re\u3000end  \n";
  for (size_t piece = 1; piece <= text.size() + 1; ++piece)
    EXPECT_EQ(words_in_pieces(text, piece), words_of(text)) << "piece " << piece;
}

TEST(BpePretokenize, random_bytes_in_pieces_split_as_the_whole) {
  // Arbitrary bytes, malformed UTF-8 included, in random pieces.
  const std::string alphabet[] = {"a",        "Z",        " ",    "  ", "\n", "\t",   "'",
                                  "'re",      "'l",       "7",    ".",  "é",  "\xC3", "\xA9",
                                  "\xF0\x9F", "\x99\x82", "\xFF", "中", "²"};
  std::mt19937 rng(7);
  for (int trial = 0; trial < 300; ++trial) {
    std::string text;
    for (int i = 0; i < 60; ++i) text += alphabet[rng() % std::size(alphabet)];
    const size_t piece = 1 + rng() % 9;
    ASSERT_EQ(words_in_pieces(text, piece), words_of(text)) << "trial " << trial;
  }
}

}  // namespace
}  // namespace trident::data
