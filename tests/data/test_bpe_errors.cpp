// Tests of the BPE tokenizer's error messages: missing or malformed vocab.json and
// merges.txt, files that do not belong together, a byte without a token, bad options.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <fstream>  // std::ofstream
#include <string>   // std::string

#include "data/bpe.h"        // ByteLevelBpe
#include "data/tokenizer.h"  // make_tokenizer
#include "data_test_util.h"  // TempDir, error_of
#include "test_bpe_vocab.h"  // TestVocab, gpt2_char

namespace trident::data {
namespace {

using namespace test_util;  // TempDir, TestVocab, error_of

constexpr const char* kVocabFix =
    "pass the vocab.json of GPT-2's tokenizer (from a Hugging Face download of gpt2) to --vocab";
constexpr const char* kMergesFix =
    "pass the merges.txt of GPT-2's tokenizer (from a Hugging Face download of gpt2) to --merges";
constexpr const char* kMismatch =
    "; the vocab and merges files do not belong together (use the vocab.json and merges.txt "
    "of one tokenizer)";

/// Files in a temporary directory: `vocab` and `merges` hold what the test writes.
class BpeErrors : public ::testing::Test {
 protected:
  std::string load_error(const std::string& vocab_text, const std::string& merges_text) {
    std::ofstream(vocab_) << vocab_text;
    std::ofstream(merges_) << merges_text;
    return error_of([&] { ByteLevelBpe::load(vocab_, merges_); });
  }
  /// The 256 single-byte tokens only.
  std::string bytes_only() const { return TestVocab{{}, false}.vocab_json().dump(); }

  TempDir dir_;
  const std::string vocab_ = dir_ / "vocab.json", merges_ = dir_ / "merges.txt";
};

TEST_F(BpeErrors, missing_files) {
  std::ofstream(merges_) << "";
  EXPECT_EQ(error_of([&] { ByteLevelBpe::load(dir_ / "nope.json", merges_); }),
            "vocab file " + (dir_ / "nope.json") + " not found; " + kVocabFix);
  std::ofstream(vocab_) << bytes_only();
  EXPECT_EQ(error_of([&] { ByteLevelBpe::load(vocab_, dir_ / "nope.txt"); }),
            "merges file " + (dir_ / "nope.txt") + " not found; " + kMergesFix);
}

TEST_F(BpeErrors, malformed_vocabulary) {
  const std::string bad_json = load_error("{\"a\": 1,", "");
  EXPECT_EQ(bad_json.rfind("vocab file " + vocab_ + " is not valid JSON (", 0), 0u) << bad_json;
  EXPECT_NE(bad_json.find(std::string("); ") + kVocabFix), std::string::npos) << bad_json;
  EXPECT_EQ(
      load_error("[1, 2]", ""),
      "vocab file " + vocab_ + " is not a JSON object of token → id (found array); " + kVocabFix);
  EXPECT_EQ(load_error("{\"a\": \"x\"}", ""),
            "vocab file " + vocab_ +
                ": token \"a\" has id \"x\"; ids must be integers from 0 to "
                "16,777,215; " +
                kVocabFix);
  EXPECT_EQ(load_error("{\"a\": 0, \"b\": 0}", ""),
            "vocab file " + vocab_ +
                ": id 0 is given to \"b\" and to \"a\"; each id must name one "
                "token");
  // A literal space is not in GPT-2's alphabet (it writes "Ġ").
  EXPECT_EQ(load_error("{\" the\": 5}", ""),
            "vocab file " + vocab_ +
                ": token \" the\" is not written in GPT-2's byte-to-unicode "
                "alphabet; only byte-level BPE vocabularies (GPT-2's) are supported");
}

TEST_F(BpeErrors, malformed_merges) {
  EXPECT_EQ(load_error(bytes_only(), "#version: 0.2\nĠt\n"),
            "merges file " + merges_ +
                " line 2: expected two tokens separated by one space, got "
                "'Ġt'; " +
                kMergesFix);
  EXPECT_EQ(load_error(bytes_only(), "a b c\n"),
            "merges file " + merges_ +
                " line 1: expected two tokens separated by one space, got "
                "'a b c'; " +
                kMergesFix);
}

TEST_F(BpeErrors, merges_that_do_not_fit_the_vocabulary) {
  EXPECT_EQ(load_error(bytes_only(), "#version: 0.2\nĠ t\n"),
            "merges file " + merges_ +
                " line 2: merge 'Ġ t' gives 'Ġt', which is not in vocab "
                "file " +
                vocab_ + kMismatch);
  EXPECT_EQ(load_error(bytes_only(), "Ġthe r\n"),
            "merges file " + merges_ + " line 1: 'Ġthe r': 'Ġthe' is not in vocab file " + vocab_ +
                kMismatch);
}

TEST_F(BpeErrors, byte_without_token) {
  nlohmann::json vocab = TestVocab{{}, false}.vocab_json();
  vocab.erase("z");
  std::ofstream(vocab_) << vocab.dump();
  std::ofstream(merges_) << "";
  const ByteLevelBpe bpe = ByteLevelBpe::load(vocab_, merges_);
  EXPECT_EQ(error_of([&] { bpe.encode("jazz"); }),
            "vocab file " + vocab_ +
                " has no token for byte 0x7A ('z' in GPT-2's alphabet); a "
                "byte-level vocabulary needs all 256 single-byte tokens");
}

TEST(TokenizerOptions, names_the_fix) {
  EXPECT_EQ(error_of([] {
              make_tokenizer({"wordpiece", "", ""});
            }),
            "unknown tokenizer 'wordpiece'; use --tokenizer byte or gpt2");
  EXPECT_EQ(error_of([] {
              make_tokenizer({"gpt2", "vocab.json", ""});
            }),
            "--tokenizer gpt2 needs --vocab vocab.json and --merges merges.txt (the files of "
            "GPT-2's tokenizer from Hugging Face)");
  EXPECT_EQ(error_of([] {
              make_tokenizer({"byte", "vocab.json", ""});
            }),
            "--vocab and --merges are for --tokenizer gpt2; the byte tokenizer needs no files "
            "(drop them, or use --tokenizer gpt2)");
  EXPECT_EQ(make_tokenizer({"byte", "", ""})->describe(), "byte (256 tokens)");
}

}  // namespace
}  // namespace trident::data
