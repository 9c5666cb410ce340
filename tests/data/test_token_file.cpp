// Tests of token files: each format read back from files written here, detection from
// content and from the path forms X / X.bin / X.idx, and each format error's message.
#include <gtest/gtest.h>  // TEST, EXPECT_*

#include <cstdint>     // int32_t, int64_t, uint16_t
#include <filesystem>  // std::filesystem::resize_file
#include <vector>      // std::vector

#include "data/token_file.h"  // TokenFile, detect_format
#include "data_test_util.h"   // TempDir, write_llmc, write_megatron, write_raw, error_of

namespace trident::data {
namespace {

using namespace test_util;  // TempDir, write_*, error_of

std::vector<int32_t> read_all(const TokenFile& f) {
  std::vector<int32_t> out(f.size());
  f.read(0, f.size(), out.data());
  return out;
}

TEST(TokenFile, reads_llmc_shard) {
  TempDir dir;
  write_llmc(dir / "shard.bin", {50256, 7, 65535, 0, 12});
  const TokenFile f = TokenFile::open(dir / "shard.bin");
  EXPECT_EQ(f.format(), TokenFormat::kLlmc);
  EXPECT_EQ(f.dtype(), TokenDtype::kUint16);
  EXPECT_EQ(f.size(), 5);
  EXPECT_EQ(read_all(f), (std::vector<int32_t>{50256, 7, 65535, 0, 12}));
  int32_t window[2];
  f.read(2, 2, window);
  EXPECT_EQ(window[0], 65535);
  EXPECT_EQ(window[1], 0);
  EXPECT_FALSE(f.documents().has_value());
}

TEST(TokenFile, reads_raw_uint16) {
  TempDir dir;
  write_raw(dir / "train.bin", {1, 2, 3, 60000});
  const TokenFile f = TokenFile::open(dir / "train.bin");
  EXPECT_EQ(f.format(), TokenFormat::kRawUint16);
  EXPECT_EQ(read_all(f), (std::vector<int32_t>{1, 2, 3, 60000}));
}

TEST(TokenFile, reads_megatron_uint16_as_concatenated_documents) {
  TempDir dir;
  write_megatron<uint16_t>(dir / "corpus_text_document", {{5, 6, 7}, {65000}, {}, {8, 9}}, 8);
  for (const char* given :
       {"corpus_text_document", "corpus_text_document.bin", "corpus_text_document.idx"}) {
    const TokenFile f = TokenFile::open(dir / given);
    EXPECT_EQ(f.format(), TokenFormat::kMegatron) << given;
    EXPECT_EQ(f.dtype(), TokenDtype::kUint16);
    EXPECT_EQ(f.documents(), 5);  // Megatron's document index has docs + 1 entries
    EXPECT_EQ(read_all(f), (std::vector<int32_t>{5, 6, 7, 65000, 8, 9})) << given;
  }
}

TEST(TokenFile, reads_megatron_int32_and_other_integer_dtypes) {
  TempDir dir;
  write_megatron<int32_t>(dir / "big", {{100000, 1}, {2, 3, 200000}, {4}}, 4);
  const TokenFile f = TokenFile::open(dir / "big");
  EXPECT_EQ(f.dtype(), TokenDtype::kInt32);
  EXPECT_EQ(read_all(f), (std::vector<int32_t>{100000, 1, 2, 3, 200000, 4}));
  int32_t window[3];
  f.read(1, 3, window);  // across a document boundary
  EXPECT_EQ(std::vector<int32_t>(window, window + 3), (std::vector<int32_t>{1, 2, 3}));

  write_megatron<uint8_t>(dir / "u8", {{1, 255}, {3}}, 1);
  write_megatron<int16_t>(dir / "i16", {{1, 30000}, {3}}, 3);
  write_megatron<int64_t>(dir / "i64", {{1, 70000}, {3}}, 5);
  EXPECT_EQ(read_all(TokenFile::open(dir / "u8")), (std::vector<int32_t>{1, 255, 3}));
  EXPECT_EQ(read_all(TokenFile::open(dir / "i16")), (std::vector<int32_t>{1, 30000, 3}));
  EXPECT_EQ(read_all(TokenFile::open(dir / "i64")), (std::vector<int32_t>{1, 70000, 3}));
}

TEST(TokenFile, detection_picks_format_from_content) {
  TempDir dir;
  write_llmc(dir / "a.bin", {1, 2});    // llm.c magic, even size
  write_raw(dir / "b.bin", {1, 2, 3});  // no magic, even size
  write_megatron<uint16_t>(dir / "c", {{1, 2}}, 8);
  write_llmc(dir / "d.dat", {1});  // any name: the content decides
  EXPECT_EQ(detect_format(dir / "a.bin").format, TokenFormat::kLlmc);
  EXPECT_EQ(detect_format(dir / "b.bin").format, TokenFormat::kRawUint16);
  EXPECT_EQ(detect_format(dir / "d.dat").format, TokenFormat::kLlmc);
  const DetectedFormat c = detect_format(dir / "c");
  EXPECT_EQ(c.format, TokenFormat::kMegatron);
  EXPECT_EQ(c.data_path, dir / "c.bin");
  EXPECT_EQ(c.index_path, dir / "c.idx");
}

TEST(TokenFile, scan_finds_range_and_first_positions) {
  TempDir dir;
  write_megatron<int16_t>(dir / "s", {{4, -2, 9}, {9, -2, 0}}, 3);
  const TokenRange r = TokenFile::open(dir / "s").scan();
  EXPECT_EQ(r.min_token, -2);
  EXPECT_EQ(r.min_position, 1);
  EXPECT_EQ(r.max_token, 9);
  EXPECT_EQ(r.max_position, 2);
}

TEST(TokenFile, missing_file_names_the_path) {
  TempDir dir;
  const std::string path = dir / "nope.bin";
  EXPECT_EQ(error_of([&] { TokenFile::open(path); }),
            "data file " + path +
                " not found; give an existing token file (llm.c shard, Megatron .bin/.idx "
                "prefix, raw uint16)");
  write_bytes(dir / "half.idx", "MMIDIDX");
  EXPECT_EQ(error_of([&] { TokenFile::open(dir / "half"); }),
            "data file " + (dir / "half.bin") + " not found (its index " + (dir / "half.idx") +
                " exists); a Megatron dataset needs both files side by side");
}

TEST(TokenFile, unknown_or_corrupt_formats_are_refused) {
  TempDir dir;
  write_bytes(dir / "odd.bin", std::string(1001, 'x'));
  EXPECT_EQ(error_of([&] { TokenFile::open(dir / "odd.bin"); }),
            "data file " + (dir / "odd.bin") +
                ": unknown format (1,001 bytes, an odd size, and no llm.c header or Megatron "
                ".idx beside it); convert it to uint16 tokens with `trident prepare-data`");

  write_llmc(dir / "v2.bin", {1, 2}, 2);
  EXPECT_NE(error_of([&] {
              TokenFile::open(dir / "v2.bin");
            }).find("llm.c shard version 2 is not supported (expected 1"),
            std::string::npos);
  write_llmc(dir / "cut.bin", {1, 2, 3}, 1, 10);
  EXPECT_NE(error_of([&] {
              TokenFile::open(dir / "cut.bin");
            }).find("llm.c header says 10 tokens (1,044 bytes) but the file has 1,030 bytes"),
            std::string::npos);
}

TEST(TokenFile, bad_megatron_index_is_refused) {
  TempDir dir;
  const std::string fix = "; rebuild the pair with Megatron's preprocess_data.py";
  write_megatron<uint16_t>(dir / "m", {{1, 2}}, 8);
  write_bytes(dir / "m.idx", std::string("NOTANIDX\0", 9) + std::string(40, '\0'));
  EXPECT_EQ(error_of([&] { TokenFile::open(dir / "m"); }),
            "data index " + (dir / "m.idx") +
                ": not a Megatron index (bad magic, expected MMIDIDX)" + fix);

  write_megatron<uint16_t>(dir / "v", {{1, 2}}, 8, 2);
  EXPECT_EQ(error_of([&] { TokenFile::open(dir / "v.idx"); }),
            "data index " + (dir / "v.idx") + ": version 2 is not supported (expected 1)" + fix);

  write_megatron<float>(dir / "f", {{1, 2}}, 7);
  EXPECT_EQ(error_of([&] { TokenFile::open(dir / "f.bin"); }),
            "data index " + (dir / "f.idx") +
                ": dtype code 7 (float32) is not supported; token ids must be integers "
                "(codes 1-5 or 8)" +
                fix);

  write_megatron<uint16_t>(dir / "short", {{1, 2, 3}, {4}}, 8);
  write_raw(dir / "short.bin", {1, 2, 3});  // one token missing
  EXPECT_EQ(error_of([&] { TokenFile::open(dir / "short"); }),
            "data file " + (dir / "short.bin") + " has 6 bytes but " + (dir / "short.idx") +
                " describes 8 (4 tokens of uint16); the pair does not match" + fix);

  write_megatron<uint16_t>(dir / "trunc", {{1, 2, 3}, {4}}, 8);
  std::filesystem::resize_file(dir / "trunc.idx", 34 + 12 * 2 + 8 * 3 - 8);  // cut doc_idx
  EXPECT_EQ(error_of([&] { TokenFile::open(dir / "trunc"); }),
            "data index " + (dir / "trunc.idx") +
                " has 74 bytes, which does not match its header (2 sequences, 3 documents)" + fix);
}

TEST(TokenFile, vocabulary_check_names_token_position_and_fix) {
  TempDir dir;
  std::vector<uint16_t> tokens(2000, 17);
  tokens[1234] = 50300;
  tokens[1500] = 50257;
  tokens[1900] = 50400;  // the largest decides the fix
  write_llmc(dir / "x.bin", tokens);
  const TokenFile f = TokenFile::open(dir / "x.bin");
  EXPECT_EQ(error_of([&] { f.check_vocab(50257); }),
            "data file " + (dir / "x.bin") +
                ": token 50300 at position 1234 is \u2265 model.vocab = 50257; set model.vocab "
                "to at least 50401");
  EXPECT_EQ(error_of([&] { f.check_vocab(50401); }), "");

  write_megatron<int32_t>(dir / "neg", {{3, 4}, {-1}}, 4);
  EXPECT_EQ(error_of([&] { TokenFile::open(dir / "neg").check_vocab(10); }),
            "data file " + (dir / "neg") +
                ": token -1 at position 2 is negative; token ids must lie in [0, model.vocab), "
                "re-tokenize the data");
}

}  // namespace
}  // namespace trident::data
