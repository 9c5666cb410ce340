// Tests of GPT-2's byte-level BPE on a vocabulary and merges written here: exact token
// ids for spaces, punctuation, digits, contractions, Unicode and newlines, lossless
// decoding, GPT-2's own ids for the byte alphabet, and each load error's message.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <fstream>  // std::ofstream
#include <memory>   // std::unique_ptr
#include <string>   // std::string
#include <vector>   // std::vector

#include "data/bpe.h"        // ByteLevelBpe
#include "data/tokenizer.h"  // ByteTokenizer, make_tokenizer
#include "data_test_util.h"  // TempDir, write_bytes, error_of
#include "test_bpe_vocab.h"  // TestVocab, small_vocab, gpt2_char, gpt2_text

namespace trident::data {
namespace {

using namespace test_util;  // TempDir, TestVocab, small_vocab, error_of
using Ids = std::vector<int32_t>;

/// The tokenizer of small_vocab() (bytes are ids 0-255, merges 256-271, <|endoftext|> 272).
class BpeTest : public ::testing::Test {
 protected:
  BpeTest() {
    small_vocab().write(dir_ / "vocab.json", dir_ / "merges.txt");
    bpe_ = std::make_unique<ByteLevelBpe>(
        ByteLevelBpe::load(dir_ / "vocab.json", dir_ / "merges.txt"));
  }
  Ids encode(const std::string& text) const {
    Ids ids = bpe_->encode(text);
    EXPECT_EQ(bpe_->decode(ids), text);  // every case also round-trips
    return ids;
  }
  TempDir dir_;
  std::unique_ptr<ByteLevelBpe> bpe_;
};

TEST_F(BpeTest, loads_vocabulary_and_merges) {
  EXPECT_EQ(bpe_->vocab_size(), 273);
  EXPECT_EQ(bpe_->merge_count(), 16);
  EXPECT_EQ(bpe_->end_of_text(), 272);
  EXPECT_EQ(bpe_->token_text(258), "Ġthe");
  EXPECT_EQ(bpe_->token_text(264), "ĊĊ");
}

TEST_F(BpeTest, merges_by_rank_inside_words) {
  // " the": Ġ t h e → Ġt h e (rank 0) → Ġt he (rank 1) → Ġthe (rank 2).
  EXPECT_EQ(encode(" the"), (Ids{258}));
  EXPECT_EQ(encode("the cat"), (Ids{'t', 257, ' ', 'c', 'a', 't'}));
  // "inthe" is one word: "he" (rank 1) merges before "in" (rank 3).
  EXPECT_EQ(encode("inthe"), (Ids{259, 't', 257}));
  // "Hello": e l → el, then el l → ell.
  EXPECT_EQ(encode("Hello world"), (Ids{'H', 262, 'o', 260, 'o', 'r', 'l', 'd'}));
}

TEST_F(BpeTest, leading_multiple_and_trailing_spaces) {
  EXPECT_EQ(encode("  leading"), (Ids{' ', ' ', 'l', 'e', 'a', 'd', 259, 'g'}));
  EXPECT_EQ(encode("multiple   spaces"),
            (Ids{'m', 'u', 'l', 't', 'i', 'p', 'l', 'e', 263, ' ', 's', 'p', 'a', 'c', 'e', 's'}));
  EXPECT_EQ(encode("trailing  "), (Ids{'t', 'r', 'a', 'i', 'l', 259, 'g', 263}));
  // Ġ Ġ Ġ: the pair merges left to right, once.
  EXPECT_EQ(encode("   "), (Ids{263, ' '}));
}

TEST_F(BpeTest, punctuation_and_digits) {
  EXPECT_EQ(encode("Hi, there! (ok)?"),
            (Ids{'H', 'i', ',', 258, 'r', 'e', '!', ' ', '(', 'o', 'k', ')', '?'}));
  // " 2024" is one word: 2 0 → 20, then Ġ 20 → Ġ20.
  EXPECT_EQ(encode("In 2024, 7"), (Ids{'I', 'n', 266, '2', '4', ',', ' ', '7'}));
}

TEST_F(BpeTest, contractions) {
  EXPECT_EQ(encode("don't"), (Ids{269, 267}));
  EXPECT_EQ(encode("we'll"), (Ids{'w', 'e', '\'', 'l', 'l'}));
  EXPECT_EQ(encode(" we'll I'M"), (Ids{260, 'e', '\'', 'l', 'l', ' ', 'I', '\'', 'M'}));
  // "'re" is a word of its own, where "'r" merges; in " 're" the quote joins the space.
  EXPECT_EQ(encode("they're"), (Ids{'t', 257, 'y', 271, 'e'}));
  EXPECT_EQ(encode(" 're"), (Ids{' ', '\'', 'r', 'e'}));
}

TEST_F(BpeTest, unicode_falls_back_to_bytes) {
  // é is C3 A9, which merge 270 joins.
  EXPECT_EQ(encode("café"), (Ids{'c', 'a', 'f', 270}));
  EXPECT_EQ(encode(" Ωμ"), (Ids{' ', 0xCE, 0xA9, 0xCE, 0xBC}));
  EXPECT_EQ(encode(" привет"),
            (Ids{' ', 0xD0, 0xBF, 0xD1, 0x80, 0xD0, 0xB8, 0xD0, 0xB2, 0xD0, 0xB5, 0xD1, 0x82}));
  EXPECT_EQ(encode("中"), (Ids{0xE4, 0xB8, 0xAD}));
  EXPECT_EQ(encode(" 🙂"), (Ids{' ', 0xF0, 0x9F, 0x99, 0x82}));
  EXPECT_EQ(encode("a\xFF"), (Ids{'a', 0xFF}));  // malformed UTF-8 survives too
}

TEST_F(BpeTest, newlines) {
  EXPECT_EQ(encode("a\n\nb"), (Ids{'a', '\n', '\n', 'b'}));  // separate words
  EXPECT_EQ(encode("a\n\n"), (Ids{'a', 264}));
  EXPECT_EQ(encode("a\n\n\nb"), (Ids{'a', 264, '\n', 'b'}));
  EXPECT_EQ(encode("x \n y"), (Ids{'x', ' ', '\n', ' ', 'y'}));
}

TEST_F(BpeTest, decodes_every_token_and_refuses_unknown_ids) {
  EXPECT_EQ(bpe_->decode({258, 262, 272}), " theell<|endoftext|>");
  EXPECT_EQ(error_of([&] { bpe_->decode({273}); }),
            "token id 273 is not in vocab file " + (dir_ / "vocab.json"));
  EXPECT_EQ(error_of([&] { bpe_->decode({-1}); }),
            "token id -1 is not in vocab file " + (dir_ / "vocab.json"));
}

TEST(Bpe, byte_alphabet_has_gpt2_ids) {
  // GPT-2's vocab.json lists the 256 single bytes first, in bytes_to_unicode's order:
  // the printable bytes, then the rest. Its '!' is 0, "\n" ('Ċ') 198, " " ('Ġ') 220.
  TempDir dir;
  auto printable = [](int b) {
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
  };
  nlohmann::json vocab;
  int id = 0;
  for (bool first_pass : {true, false})
    for (int b = 0; b < 256; ++b)
      if (printable(b) == first_pass) vocab[gpt2_char(static_cast<uint8_t>(b))] = id++;
  std::ofstream(dir / "vocab.json") << vocab.dump();
  std::ofstream(dir / "merges.txt") << "#version: 0.2\n";
  const ByteLevelBpe bpe = ByteLevelBpe::load(dir / "vocab.json", dir / "merges.txt");
  EXPECT_EQ(bpe.encode("!"), (Ids{0}));
  EXPECT_EQ(bpe.encode("\n"), (Ids{198}));
  EXPECT_EQ(bpe.encode(" "), (Ids{220}));
  EXPECT_EQ(bpe.encode(std::string(1, '\0')), (Ids{188}));
  EXPECT_EQ(bpe.encode("\xFF"), (Ids{187}));
  EXPECT_EQ(gpt2_char(' '), "Ġ");
  EXPECT_EQ(gpt2_char('\n'), "Ċ");
}

TEST(ByteTokenizer, every_byte_is_a_token) {
  const ByteTokenizer bytes;
  EXPECT_EQ(bytes.encode("a é\n"), (Ids{'a', ' ', 0xC3, 0xA9, '\n'}));
  EXPECT_EQ(bytes.decode({'a', ' ', 0xC3, 0xA9, '\n'}), "a é\n");
  EXPECT_EQ(bytes.vocab_size(), 256);
  EXPECT_EQ(bytes.end_of_text(), 0);
  EXPECT_EQ(error_of([&] { bytes.decode({256}); }),
            "token id 256 is not a byte; the byte tokenizer has ids 0-255");
}

}  // namespace
}  // namespace trident::data
