// GPT-2's byte-to-unicode alphabet: how vocab.json and merges.txt write raw bytes as
// printable characters (byte 0x20, the space, is written "Ġ"; 0x0A, the newline, "Ċ").
#pragma once

#include <cstdint>      // uint8_t
#include <optional>     // std::optional
#include <string>       // std::string
#include <string_view>  // std::string_view

namespace trident::data {

/// The character that stands for `byte`: the printable bytes '!'..'~', '¡'..'¬' and
/// '®'..'ÿ' stand for themselves; the other 68 take U+0100, U+0101, ... in byte order.
char32_t byte_to_char(uint8_t byte);

/// The byte that `c` stands for, or -1 if `c` is not in the alphabet.
int char_to_byte(char32_t c);

/// A token written in the alphabet ("Ġthe") as its raw bytes (" the"); nullopt if a
/// character is outside the alphabet or the UTF-8 is malformed.
std::optional<std::string> alphabet_to_bytes(std::string_view token);

/// Raw bytes written in the alphabet, for messages and for writing vocabularies.
std::string bytes_to_alphabet(std::string_view bytes);

}  // namespace trident::data
