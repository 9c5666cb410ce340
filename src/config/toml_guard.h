// Guards the TOML parser against input it cannot take: the toml++ of Debian 12 reaches
// undefined behaviour (TOML_UNREACHABLE) when it meets some non-ASCII characters outside
// strings and comments, where it asks whether they are whitespace (found by fuzzing).
#pragma once
#include <cstddef>
#include <optional>
#include <string>

namespace trident::config_detail {

/// The byte offset of the first character of `text` outside strings and comments that the
/// parser cannot classify (U+00A1-U+049A, U+2D3E-U+3137 but U+3000, U+FAE6-U+FEFE), and
/// the code point; nothing when there is none. Such a character is never valid TOML there.
struct UnreadableChar {
  size_t offset = 0;
  char32_t code_point = 0;
};
std::optional<UnreadableChar> find_unreadable_char(const std::string& text);

}  // namespace trident::config_detail
