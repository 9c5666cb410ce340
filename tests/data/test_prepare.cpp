// Tests of prepare-data's library side: a file streamed through a buffer much smaller
// than itself gives the same token file as one buffer, for both tokenizers; the file
// reads back through TokenFile and open_source; documents end with end-of-text.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <fstream>   // std::ifstream
#include <iterator>  // std::istreambuf_iterator
#include <memory>    // std::unique_ptr
#include <random>    // std::mt19937
#include <string>    // std::string
#include <vector>    // std::vector

#include "data/bpe.h"           // ByteLevelBpe
#include "data/prepare.h"       // prepare_token_file
#include "data/token_file.h"    // TokenFile
#include "data/token_source.h"  // open_source
#include "data_test_util.h"     // TempDir, write_bytes
#include "test_bpe_vocab.h"     // small_vocab

namespace trident::data {
namespace {

using namespace test_util;  // TempDir, write_bytes, small_vocab
using Ids = std::vector<int32_t>;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

/// About 5 KB of text with multi-byte characters, whitespace runs, contractions and
/// newlines, so that a small buffer cuts through all of them.
std::string mixed_text() {
  const char* pieces[] = {"The",      " the",  " theory", "don't", " we'll",  "  ",      "   ",
                          "\n",       "\n\n",  "\t",      "café",  " Ωμέγα",  " привет", "中文",
                          "🙂",     " 2024", "!?",      " ",     "e\u0301", "x²",      "'re",
                          " they're", "Hello", "inthe",   ",",     "\u3000"};
  std::mt19937 rng(2024);
  std::string text;
  while (text.size() < 5000) text += pieces[rng() % std::size(pieces)];
  return text;
}

Ids read_tokens(const std::string& path) {
  const TokenFile file = TokenFile::open(path);
  Ids tokens(file.size());
  file.read(0, file.size(), tokens.data());
  return tokens;
}

class PrepareTest : public ::testing::Test {
 protected:
  PrepareTest() {
    small_vocab().write(dir_ / "vocab.json", dir_ / "merges.txt");
    bpe_ = std::make_unique<ByteLevelBpe>(
        ByteLevelBpe::load(dir_ / "vocab.json", dir_ / "merges.txt"));
    write_bytes(text_path_, text_);
  }
  PrepareStats prepare(const Tokenizer& tokenizer, const std::string& out, size_t buffer,
                       std::vector<std::string> inputs = {}, bool eot = false) {
    PrepareOptions options;
    options.inputs = inputs.empty() ? std::vector<std::string>{text_path_} : inputs;
    options.output = out;
    options.buffer_bytes = buffer;
    options.append_eot = eot;
    return prepare_token_file(tokenizer, options);
  }

  TempDir dir_;
  const std::string text_ = mixed_text(), text_path_ = dir_ / "text.txt";
  std::unique_ptr<ByteLevelBpe> bpe_;
  ByteTokenizer bytes_;
};

TEST_F(PrepareTest, small_buffers_give_the_same_file_for_both_tokenizers) {
  ASSERT_GE(text_.size(), 5000u);
  for (const Tokenizer* tokenizer :
       {static_cast<const Tokenizer*>(bpe_.get()), static_cast<const Tokenizer*>(&bytes_)}) {
    const std::string whole = dir_ / "whole.bin";
    const PrepareStats stats = prepare(*tokenizer, whole, 1 << 20);
    const Ids expected = tokenizer->encode(text_);
    EXPECT_EQ(read_tokens(whole), expected) << tokenizer->describe();
    EXPECT_EQ(stats.tokens, static_cast<int64_t>(expected.size()));
    EXPECT_EQ(stats.bytes, static_cast<int64_t>(text_.size()));
    for (size_t buffer : {1, 2, 3, 7, 64, 4999}) {
      const std::string streamed = dir_ / ("streamed" + std::to_string(buffer) + ".bin");
      prepare(*tokenizer, streamed, buffer);
      EXPECT_EQ(read_file(streamed), read_file(whole))
          << tokenizer->describe() << ", buffer " << buffer;
    }
  }
}

TEST_F(PrepareTest, bpe_compresses_and_round_trips) {
  const std::string out = dir_ / "bpe.bin";
  const PrepareStats stats = prepare(*bpe_, out, 7);
  const Ids tokens = read_tokens(out);
  EXPECT_LT(tokens.size(), text_.size());  // the merges make words shorter than their bytes
  EXPECT_EQ(bpe_->decode(tokens), text_);
  EXPECT_EQ(stats.files, 1);
  EXPECT_EQ(stats.max_token, 271);  // "'r", in "they're", is the highest merge
}

TEST_F(PrepareTest, writes_an_llmc_header_that_the_trainer_reads) {
  const std::string out = dir_ / "bytes.bin";
  prepare(bytes_, out, 7);
  const std::string file = read_file(out);
  ASSERT_EQ(file.size(), 1024 + 2 * text_.size());
  const auto* header = reinterpret_cast<const int32_t*>(file.data());
  EXPECT_EQ(header[0], 20240520);
  EXPECT_EQ(header[1], 1);
  EXPECT_EQ(header[2], static_cast<int32_t>(text_.size()));
  for (int i = 3; i < 256; ++i) ASSERT_EQ(header[i], 0) << i;
  const TokenFile tokens = TokenFile::open(out);
  EXPECT_EQ(tokens.format(), TokenFormat::kLlmc);
  EXPECT_EQ(tokens.dtype(), TokenDtype::kUint16);
  SourceOptions options{out, /*vocab=*/256, /*seq_len=*/16, /*seed=*/1};
  options.global_batch = 1;
  const auto source = open_source(options);
  EXPECT_EQ(source->describe(), "llm.c shard " + out + ": " + format_count(text_.size()) +
                                    " tokens, " + format_count((text_.size() - 1) / 16) +
                                    " windows of 16; read in epochs");
  EXPECT_FALSE(std::ifstream(out + ".tmp").good());
}

TEST_F(PrepareTest, end_of_text_follows_each_document) {
  write_bytes(dir_ / "a.txt", "the end");
  write_bytes(dir_ / "b.txt", "\n\n");
  const std::vector<std::string> inputs = {dir_ / "a.txt", dir_ / "b.txt"};
  const PrepareStats stats = prepare(*bpe_, dir_ / "docs.bin", 3, inputs, true);
  EXPECT_EQ(read_tokens(dir_ / "docs.bin"), (Ids{'t', 257, ' ', 'e', 'n', 'd', 272, 264, 272}));
  EXPECT_EQ(stats.files, 2);
  EXPECT_EQ(stats.max_token, 272);
  prepare(bytes_, dir_ / "docs_bytes.bin", 3, inputs, true);
  EXPECT_EQ(read_tokens(dir_ / "docs_bytes.bin"),
            (Ids{'t', 'h', 'e', ' ', 'e', 'n', 'd', 0, '\n', '\n', 0}));
}

TEST_F(PrepareTest, empty_input_gives_an_empty_file) {
  write_bytes(dir_ / "empty.txt", "");
  prepare(bytes_, dir_ / "empty.bin", 7, {dir_ / "empty.txt"});
  EXPECT_EQ(TokenFile::open(dir_ / "empty.bin").size(), 0);
}

}  // namespace
}  // namespace trident::data
