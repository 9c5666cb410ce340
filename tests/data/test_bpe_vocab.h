// Helpers for the BPE and prepare-data tests: GPT-2's byte alphabet written out here
// independently of the library, and a small vocab.json + merges.txt that a test writes.
#pragma once

#include <cstdint>            // uint8_t
#include <fstream>            // std::ofstream
#include <nlohmann/json.hpp>  // nlohmann::json
#include <string>             // std::string
#include <utility>            // std::pair
#include <vector>             // std::vector

namespace trident::data::test_util {

/// The UTF-8 of the character that stands for `byte` in GPT-2's vocab.json: printable
/// bytes ('!'..'~', 0xA1..0xAC, 0xAE..0xFF) stand for themselves, the others take
/// U+0100 onwards in byte order (so ' ' is 'Ġ' U+0120 and '\n' is 'Ċ' U+010A).
inline std::string gpt2_char(uint8_t byte) {
  auto printable = [](int b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  unsigned code = byte;
  if (!printable(byte)) {
    code = 256;
    for (int b = 0; b < byte; ++b) code += !printable(b);
  }
  std::string out;
  if (code < 0x80) {
    out += static_cast<char>(code);
  } else {
    out += static_cast<char>(0xC0 | (code >> 6));
    out += static_cast<char>(0x80 | (code & 0x3F));
  }
  return out;
}

/// Raw bytes in GPT-2's alphabet: " the" → "Ġthe".
inline std::string gpt2_text(const std::string& bytes) {
  std::string out;
  for (char c : bytes) out += gpt2_char(static_cast<uint8_t>(c));
  return out;
}

/// The test vocabulary: byte b has id b (so byte fallback ids read as bytes), merge k
/// (raw-byte pair, in rank order) makes token 256 + k, and "<|endoftext|>" comes last.
struct TestVocab {
  std::vector<std::pair<std::string, std::string>> merges;
  bool end_of_text = true;

  nlohmann::json vocab_json() const {
    nlohmann::json vocab = nlohmann::json::object();
    for (int b = 0; b < 256; ++b) vocab[gpt2_char(static_cast<uint8_t>(b))] = b;
    int id = 256;
    for (const auto& [left, right] : merges) vocab[gpt2_text(left + right)] = id++;
    if (end_of_text) vocab["<|endoftext|>"] = id;
    return vocab;
  }
  std::string merges_txt() const {
    std::string text = "#version: 0.2\n";
    for (const auto& [left, right] : merges)
      text += gpt2_text(left) + " " + gpt2_text(right) + "\n";
    return text;
  }
  void write(const std::string& vocab_path, const std::string& merges_path) const {
    std::ofstream(vocab_path) << vocab_json().dump();
    std::ofstream(merges_path) << merges_txt();
  }
};

/// The merges the tests use, with the ids they get.
inline TestVocab small_vocab() {
  return TestVocab{{
      {" ", "t"},        // 256 "Ġt"
      {"h", "e"},        // 257 "he"
      {" t", "he"},      // 258 "Ġthe"
      {"i", "n"},        // 259 "in"
      {" ", "w"},        // 260 "Ġw"
      {"e", "l"},        // 261 "el"
      {"el", "l"},       // 262 "ell"
      {" ", " "},        // 263 "ĠĠ"
      {"\n", "\n"},      // 264 "ĊĊ"
      {"2", "0"},        // 265 "20"
      {" ", "20"},       // 266 "Ġ20"
      {"'", "t"},        // 267 "'t"
      {"o", "n"},        // 268 "on"
      {"d", "on"},       // 269 "don"
      {"\xC3", "\xA9"},  // 270 "Ã©", the UTF-8 of é
      {"'", "r"},        // 271 "'r": only the contraction word "'re" starts with it
  }};
}

}  // namespace trident::data::test_util
