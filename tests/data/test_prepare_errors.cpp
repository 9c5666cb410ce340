// Tests of prepare-data's errors and progress line: each error names the file and the
// fix and leaves the output as it was; the progress line is plain lines off a terminal.
#include <gtest/gtest.h>  // TEST, EXPECT_*
#include <stdio.h>        // open_memstream

#include <cstdio>   // std::fclose
#include <fstream>  // std::ifstream, std::ofstream
#include <regex>    // std::regex_match
#include <string>   // std::string

#include "data/bpe.h"               // ByteLevelBpe
#include "data/prepare.h"           // prepare_token_file
#include "data/prepare_progress.h"  // Progress
#include "data_test_util.h"         // TempDir, write_bytes, error_of
#include "test_bpe_vocab.h"         // TestVocab, small_vocab

namespace trident::data {
namespace {

using namespace test_util;  // TempDir, write_bytes, error_of, TestVocab

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

class PrepareErrors : public ::testing::Test {
 protected:
  PrepareErrors() {
    write_bytes(text_, "the text\n");
    write_bytes(out_, "previous contents");
  }
  std::string prepare_error(const Tokenizer& tokenizer, std::vector<std::string> inputs,
                            std::string out, bool eot = false) {
    PrepareOptions options;
    options.inputs = std::move(inputs);
    options.output = std::move(out);
    options.append_eot = eot;
    options.buffer_bytes = 4;
    return error_of([&] { prepare_token_file(tokenizer, options); });
  }
  /// The output file still holds what it held, and no temporary file is left.
  void expect_output_untouched() {
    EXPECT_EQ(read_file(out_), "previous contents");
    EXPECT_FALSE(std::ifstream(out_ + ".tmp").good());
  }

  TempDir dir_;
  const std::string text_ = dir_ / "text.txt", out_ = dir_ / "out.bin";
  ByteTokenizer bytes_;
};

TEST_F(PrepareErrors, missing_input) {
  EXPECT_EQ(
      prepare_error(bytes_, {text_, dir_ / "missing.txt"}, out_),
      "input file " + (dir_ / "missing.txt") + " not found; pass existing text files to --in");
  expect_output_untouched();
  EXPECT_EQ(prepare_error(bytes_, {dir_ / ""}, out_),
            "input file " + (dir_ / "") + " is a directory; pass the text files in it to --in");
  EXPECT_EQ(prepare_error(bytes_, {}, out_), "no input files; pass text files to --in");
  EXPECT_EQ(prepare_error(bytes_, {out_}, out_),
            "--out " + out_ + " is also an input; write the tokens to another file");
}

TEST_F(PrepareErrors, output_directory_missing) {
  const std::string out = dir_ / "no/such/dir/out.bin";
  EXPECT_EQ(prepare_error(bytes_, {text_}, out),
            "cannot create " + out +
                ".tmp: No such file or directory; choose an --out in an "
                "existing, writable directory");
}

TEST_F(PrepareErrors, token_ids_above_uint16) {
  nlohmann::json vocab = small_vocab().vocab_json();
  vocab["Ġthe"] = 70000;  // "Ġthe" moves from 258 to 70000
  std::ofstream(dir_ / "vocab.json") << vocab.dump();
  std::ofstream(dir_ / "merges.txt") << small_vocab().merges_txt();
  const ByteLevelBpe bpe = ByteLevelBpe::load(dir_ / "vocab.json", dir_ / "merges.txt");
  EXPECT_EQ(
      prepare_error(bpe, {text_}, out_),
      "tokenizer " + bpe.describe() +
          " has token ids up to 70,000, but llm.c token files "
          "hold uint16 ids (at most 65,535); use a vocabulary whose ids are all below 65,536");
  expect_output_untouched();
}

TEST_F(PrepareErrors, end_of_text_missing) {
  TestVocab vocab = small_vocab();
  vocab.end_of_text = false;
  vocab.write(dir_ / "vocab.json", dir_ / "merges.txt");
  const ByteLevelBpe bpe = ByteLevelBpe::load(dir_ / "vocab.json", dir_ / "merges.txt");
  EXPECT_EQ(prepare_error(bpe, {text_}, out_, /*eot=*/true),
            "--append-eot: tokenizer " + bpe.describe() +
                " has no end-of-text token "
                "(\"<|endoftext|>\" in vocab.json); add it to the vocabulary or drop --append-eot");
  expect_output_untouched();
}

TEST_F(PrepareErrors, failure_midway_leaves_the_output_alone) {
  nlohmann::json vocab = TestVocab{{}, false}.vocab_json();
  vocab.erase("x");
  std::ofstream(dir_ / "vocab.json") << vocab.dump();
  std::ofstream(dir_ / "merges.txt") << "";
  const ByteLevelBpe bpe = ByteLevelBpe::load(dir_ / "vocab.json", dir_ / "merges.txt");
  EXPECT_EQ(prepare_error(bpe, {text_}, out_),
            "vocab file " + (dir_ / "vocab.json") +
                " has no token for byte 0x78 ('x' in GPT-2's "
                "alphabet); a byte-level vocabulary needs all 256 single-byte tokens");
  expect_output_untouched();
}

TEST(PrepareProgress, plain_lines_when_not_a_terminal) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  Progress progress(out, 2'000'000, /*interval_s=*/0);
  progress.update(500'000, 1234);
  progress.finish(2'000'000, 5678);
  std::fclose(out);
  const std::string text(buffer, size);
  free(buffer);
  EXPECT_TRUE(std::regex_match(
      text, std::regex("prepare-data: 0\\.5/2\\.0 MB \\(25%\\), [0-9.]+ MB/s, 1,234 tokens\n"
                       "prepare-data: 2\\.0/2\\.0 MB \\(100%\\), [0-9.]+ MB/s, 5,678 tokens\n")))
      << text;
}

TEST(PrepareProgress, at_most_one_line_per_interval) {
  char* buffer = nullptr;
  size_t size = 0;
  std::FILE* out = open_memstream(&buffer, &size);
  Progress progress(out, 0, /*interval_s=*/3600);
  for (int i = 1; i <= 100; ++i) progress.update(i, i);
  progress.finish(100, 100);
  std::fclose(out);
  const std::string text(buffer, size);
  free(buffer);
  EXPECT_TRUE(
      std::regex_match(text, std::regex("prepare-data: 0\\.0 MB, [0-9.]+ MB/s, 100 tokens\n")))
      << text;
}

}  // namespace
}  // namespace trident::data
