// A small TOML lexer that skips strings and comments and decodes UTF-8 elsewhere.
#include "config/toml_guard.h"

namespace trident::config_detail {

namespace {

/// The ranges toml++'s is_non_ascii_horizontal_whitespace has no case for.
bool unclassifiable(char32_t c) {
  return (c >= 0xA1 && c <= 0x49A) || (c >= 0x2D3E && c <= 0x3137 && c != 0x3000) ||
         (c >= 0xFAE6 && c <= 0xFEFE);
}

/// Decodes the UTF-8 sequence at `i` (advancing it); a malformed one decodes as 0.
char32_t decode(const std::string& s, size_t& i) {
  const unsigned char lead = static_cast<unsigned char>(s[i++]);
  int more = lead >= 0xF0 ? 3 : lead >= 0xE0 ? 2 : lead >= 0xC0 ? 1 : 0;
  char32_t c = more == 3 ? lead & 0x07 : more == 2 ? lead & 0x0F : more == 1 ? lead & 0x1F : 0;
  for (; more > 0; --more) {
    if (i >= s.size() || (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80) return 0;
    c = (c << 6) | (static_cast<unsigned char>(s[i++]) & 0x3F);
  }
  return c;
}

}  // namespace

std::optional<UnreadableChar> find_unreadable_char(const std::string& text) {
  size_t i = 0;
  while (i < text.size()) {
    const char ch = text[i];
    if (ch == '#') {  // a comment runs to the end of the line
      while (i < text.size() && text[i] != '\n') ++i;
    } else if (ch == '"' || ch == '\'') {
      const std::string quote =
          text.compare(i, 3, std::string(3, ch)) == 0 ? std::string(3, ch) : std::string(1, ch);
      i += quote.size();
      while (i < text.size() && text.compare(i, quote.size(), quote) != 0) {
        if (ch == '"' && text[i] == '\\') ++i;            // an escaped character
        if (quote.size() == 1 && text[i] == '\n') break;  // unterminated: toml++ reports it
        ++i;
      }
      i += quote.size();
    } else if (static_cast<unsigned char>(ch) >= 0x80) {
      const size_t at = i;
      const char32_t c = decode(text, i);
      if (unclassifiable(c)) return UnreadableChar{at, c};
    } else {
      ++i;
    }
  }
  return std::nullopt;
}

}  // namespace trident::config_detail
