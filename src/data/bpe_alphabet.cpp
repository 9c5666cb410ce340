// GPT-2's byte-to-unicode table (bytes_to_unicode in its encoder.py), both ways.
#include "data/bpe_alphabet.h"

#include <array>  // std::array

#include "data/bpe_unicode.h"  // decode_utf8, encode_utf8

namespace trident::data {
namespace {

bool stands_for_itself(int b) {
  return (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
}

/// byte → character: printable bytes keep their code point, the rest get 256, 257, ...
std::array<char32_t, 256> make_table() {
  std::array<char32_t, 256> table{};
  char32_t next = 256;
  for (int b = 0; b < 256; ++b) table[b] = stands_for_itself(b) ? char32_t(b) : next++;
  return table;
}

const std::array<char32_t, 256> kByteToChar = make_table();

/// character → byte for the characters below 256 + 68; -1 where none stands for a byte.
constexpr size_t kAlphabetEnd = 256 + 68;
std::array<int, kAlphabetEnd> make_inverse() {
  std::array<int, kAlphabetEnd> inverse;
  inverse.fill(-1);
  for (int b = 0; b < 256; ++b) inverse[kByteToChar[b]] = b;
  return inverse;
}

const std::array<int, kAlphabetEnd> kCharToByte = make_inverse();

}  // namespace

char32_t byte_to_char(uint8_t byte) { return kByteToChar[byte]; }

int char_to_byte(char32_t c) { return c < kAlphabetEnd ? kCharToByte[c] : -1; }

std::optional<std::string> alphabet_to_bytes(std::string_view token) {
  std::string bytes;
  for (size_t pos = 0; pos < token.size();) {
    const DecodedChar d = decode_utf8(token, pos);
    const int b = d.code_point == kInvalidCodePoint ? -1 : char_to_byte(d.code_point);
    if (b < 0) return std::nullopt;
    bytes += static_cast<char>(b);
    pos += d.bytes;
  }
  return bytes;
}

std::string bytes_to_alphabet(std::string_view bytes) {
  std::string out;
  for (char b : bytes) out += encode_utf8(byte_to_char(static_cast<uint8_t>(b)));
  return out;
}

}  // namespace trident::data
