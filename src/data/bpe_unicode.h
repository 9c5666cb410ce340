// UTF-8 decoding and the character classes that GPT-2's pre-tokenisation pattern uses
// (\p{L}, \p{N}, \s), from range tables that cover the common scripts.
#pragma once

#include <cstddef>      // size_t
#include <string>       // std::string
#include <string_view>  // std::string_view

namespace trident::data {

/// What a malformed UTF-8 byte decodes to: one byte, of class kOther.
constexpr char32_t kInvalidCodePoint = 0xFFFFFFFF;

/// One decoded character: its code point and how many bytes it took.
struct DecodedChar {
  char32_t code_point = kInvalidCodePoint;
  size_t bytes = 1;
};

/// The classes of GPT-2's pattern: \p{L}, \p{N}, \s and everything else.
enum class CharClass { kLetter, kNumber, kSpace, kOther };

/// Decodes the character at byte `pos` (< text.size()). A malformed or truncated sequence,
/// an overlong form or a surrogate gives kInvalidCodePoint over one byte, so that any
/// byte string decodes, and re-encodes, losslessly.
DecodedChar decode_utf8(std::string_view text, size_t pos);

/// The UTF-8 bytes of `code_point` (≤ 0x10FFFF).
std::string encode_utf8(char32_t code_point);

/// The number of bytes at the end of `text` that begin a multi-byte sequence still
/// waiting for its last bytes (0–3): more text may complete them.
size_t incomplete_utf8_tail(std::string_view text);

/// The class of `code_point`. \s is Unicode's White_Space. \p{L} and \p{N} follow the
/// Unicode data of Python's `regex` package inside the blocks listed in bpe_unicode.cpp
/// and docs/real-data.md (Latin, Greek, Cyrillic, Armenian, Hebrew, Arabic, the main
/// Indic scripts, Thai, Georgian, Ethiopic, Hangul, Kana, CJK ideographs, full-width
/// forms, ...); characters outside them (emoji, symbols, other scripts) are kOther.
CharClass char_class(char32_t code_point);

}  // namespace trident::data
