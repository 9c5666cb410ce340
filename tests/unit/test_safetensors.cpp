// Single-process tests of the checkpoint format's pieces: XXH64 against published values,
// safetensors round trips and the errors of damaged files, the box geometry of flat ranges
// and tp shards (fused QKV included), and the Hugging Face names.
#include <ATen/ATen.h>  // at::arange, at::equal
#include <gtest/gtest.h>

#include <cctype>      // std::isxdigit
#include <cstdint>     // uint64_t
#include <cstring>     // std::strlen
#include <filesystem>  // std::filesystem::temp_directory_path
#include <fstream>     // std::fstream
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"   // CheckpointError
#include "checkpoint/checksum.h"     // xxh64, Xxh64, to_hex
#include "checkpoint/hf.h"           // to_hf_name, from_hf_name, read_hf_index
#include "checkpoint/index.h"        // read_index, CheckpointIndex
#include "checkpoint/reader.h"       // SliceReader
#include "checkpoint/safetensors.h"  // write_safetensors, SafetensorsFile
#include "checkpoint/slices.h"       // flat_range_boxes, flat_range_pieces

namespace trident::checkpoint {
namespace {

std::string temp_path(const std::string& name) {
  return (std::filesystem::temp_directory_path() / ("trident_test_" + name)).string();
}

TEST(Xxh64, matches_the_reference_values) {
  auto hex = [](const char* s) { return to_hex(xxh64(s, std::strlen(s))); };
  EXPECT_EQ(hex(""), "ef46db3751d8e999");
  EXPECT_EQ(hex("a"), "d24ec4f1a98c6e5b");
  EXPECT_EQ(hex("abc"), "44bc2cf5ad770999");
  EXPECT_EQ(hex("Nobody inspects the spammish repetition"), "fbcea83c8a378bf1");
}

TEST(Xxh64, streaming_in_any_pieces_equals_one_call) {
  std::vector<unsigned char> data(1000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<unsigned char>(i * 7 + 3);
  const uint64_t whole = xxh64(data.data(), data.size());
  for (size_t piece : {1u, 5u, 31u, 32u, 33u, 100u}) {
    Xxh64 h;
    for (size_t i = 0; i < data.size(); i += piece)
      h.update(data.data() + i, std::min(piece, data.size() - i));
    EXPECT_EQ(h.digest(), whole) << "pieces of " << piece;
  }
}

TEST(Safetensors, round_trip_keeps_every_dtype_shape_and_value) {
  const std::string path = temp_path("roundtrip.safetensors");
  const at::Tensor f64 = at::randn({3, 5}, at::kDouble);
  const at::Tensor bf16 = at::randn({7}, at::kFloat).to(at::kBFloat16);
  const at::Tensor i64 = at::arange(6, at::kLong).view({2, 3});
  const at::Tensor f32 = at::randn({4, 2}, at::kFloat).t();  // not contiguous
  const WrittenFile w = write_safetensors(
      path, {{"bf16", bf16}, {"f64", f64}, {"i64", i64}, {"f32", f32}}, {{"format", "pt"}});
  const SafetensorsFile file(path);
  EXPECT_EQ(file.size(), w.bytes);
  EXPECT_EQ(file.checksum(), w.checksum);
  EXPECT_EQ(file.metadata().at("format"), "pt");
  EXPECT_TRUE(at::equal(file.view("f64"), f64));
  EXPECT_TRUE(at::equal(file.view("bf16"), bf16));
  EXPECT_TRUE(at::equal(file.view("i64"), i64));
  EXPECT_TRUE(at::equal(file.view("f32"), f32));
  EXPECT_EQ(file.find("f32")->shape, (std::vector<int64_t>{2, 4}));
  for (const auto& [name, e] : file.entries())  // larger elements first keeps all aligned
    EXPECT_EQ(e.begin % static_cast<int64_t>(c10::elementSize(e.dtype)), 0) << name;
  std::filesystem::remove(path);
}

/// Kilobytes of `path`'s mapping resident in this process (/proc/self/smaps), or -1.
int64_t resident_kib_of_mapping(const std::string& path) {
  std::ifstream smaps("/proc/self/smaps");
  std::string line;
  bool inside = false;
  while (std::getline(smaps, line)) {
    if (line.find('-') != std::string::npos && line.find(' ') != std::string::npos &&
        std::isxdigit(static_cast<unsigned char>(line[0])) && line.find(':') > line.find(' '))
      inside = line.size() >= path.size() &&
               line.compare(line.size() - path.size(), path.size(), path) == 0;
    else if (inside && line.rfind("Rss:", 0) == 0)
      return std::stoll(line.substr(4));
  }
  return -1;
}

// A checkpoint larger than memory is verified and read without its pages piling up in the
// reader: the checksum and each batch of copies leave the file's pages in the page cache.
TEST(Safetensors, verifying_and_reading_leave_the_file_out_of_the_resident_set) {
  const std::string path = temp_path("resident.safetensors");
  const at::Tensor big = at::arange(4 << 20, at::kFloat);  // 16 MiB
  const WrittenFile w = write_safetensors(path, {{"big", big}}, {});
  CheckpointIndex index;
  index.dir = std::filesystem::path(path).parent_path().string();
  index.files[std::filesystem::path(path).filename().string()] = {w.bytes, to_hex(w.checksum)};
  TensorInfo& info = index.tensors["big"];
  info.dtype = "F32";
  info.shape = {4 << 20};
  info.slices.push_back({std::filesystem::path(path).filename().string(), "big", {{0}, {4 << 20}}});
  at::Tensor out = at::empty({4 << 20}, at::kFloat);
  SliceReader reader(index);
  reader.add("big", {{0}, {4 << 20}}, out);
  reader.verify();  // reads every byte for the checksum
  EXPECT_LT(resident_kib_of_mapping(path), 1024) << "after the checksum";
  reader.execute();
  EXPECT_LT(resident_kib_of_mapping(path), 1024) << "after the copies";
  EXPECT_TRUE(at::equal(out, big));
  {
    const SafetensorsFile file(path);
    EXPECT_EQ(file.view("big").sum().item<double>(), big.sum().item<double>());
    EXPECT_GT(resident_kib_of_mapping(path), 8 << 10);  // the measurement sees a read
  }
  std::filesystem::remove(path);
}

TEST(Safetensors, damaged_files_are_refused_with_the_file_named) {
  const std::string path = temp_path("damaged.safetensors");
  const WrittenFile w = write_safetensors(path, {{"x", at::ones({64}, at::kDouble)}}, {});
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(w.bytes - 10);
    f.put('\x7f');
  }
  try {
    SafetensorsFile file(path, {w.bytes, to_hex(w.checksum)});
    FAIL() << "a flipped byte was not detected";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("checksum"), std::string::npos) << e.what();
  }
  std::filesystem::resize_file(path, 20);
  EXPECT_THROW(SafetensorsFile{path}, CheckpointError);
  std::filesystem::remove(path);
  try {
    SafetensorsFile file(path);
    FAIL() << "a missing file was opened";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("missing"), std::string::npos) << e.what();
  }
}

// A header's numbers come from the file: shapes and offsets whose arithmetic would overflow
// int64 are refused as corrupt, not computed with (scripts/sanitize.sh checks the "not").
TEST(Safetensors, headers_with_overflowing_shapes_or_offsets_are_refused) {
  const std::string path = temp_path("overflow.safetensors");
  const std::string headers[] = {
      R"({"x":{"dtype":"F64","shape":[4611686018427387904,4],"data_offsets":[0,8]}})",
      R"({"x":{"dtype":"F64","shape":[1152921504606846976],"data_offsets":[0,8]}})",
      R"({"x":{"dtype":"F64","shape":[-1],"data_offsets":[0,8]}})",
      R"({"x":{"dtype":"F64","shape":[1],"data_offsets":[9223372036854775800,9223372036854775807]}})",
      R"({"x":{"dtype":"F64","shape":[1],"data_offsets":[-9223372036854775807,8]}})",
  };
  for (const std::string& header : headers) {
    {
      std::ofstream f(path, std::ios::binary | std::ios::trunc);
      const uint64_t length = header.size();
      f.write(reinterpret_cast<const char*>(&length), 8);
      f << header << std::string(8, '\0');
    }
    EXPECT_THROW(SafetensorsFile{path}, CheckpointError) << header;
  }
  std::filesystem::remove(path);
}

// Fuzz findings: JSON of the wrong type in an index.json or a Hugging Face config.json or
// shard index escaped as a raw nlohmann type_error; it must be a CheckpointError.
TEST(CheckpointReaders, json_of_the_wrong_type_is_refused_with_the_file_named) {
  const std::string dir = temp_path("wrong_type_json");
  auto write = [&](const std::string& name, const std::string& text) {
    std::ofstream(dir + "/" + name, std::ios::trunc) << text;
  };
  const std::string indexes[] = {
      R"({"format": 8})",
      R"({"format": "trident-checkpoint", "format_version": "1"})",
      R"({"format": "trident-checkpoint", "format_version": 1e300})",
      R"({"format": "trident-checkpoint", "format_version": 99999999999})",
  };
  for (const std::string& text : indexes) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write("index.json", text);
    EXPECT_THROW(read_index(dir), CheckpointError) << text;
  }
  const std::string llama =
      R"("vocab_size": 16, "hidden_size": 8, "num_hidden_layers": 1, "num_attention_heads": 2,
         "intermediate_size": 16, "max_position_embeddings": 8)";
  const std::string configs[] = {
      R"({"model_type": 8})",
      R"([1, 2])",
      R"({"model_type": "llama", "rope_theta": "x", )" + llama + "}",
      R"({"model_type": "llama", "rms_norm_eps": [], )" + llama + "}",
      R"({"model_type": "llama", "tie_word_embeddings": 1, )" + llama + "}",
      R"({"model_type": "llama", )" + llama + "}",
  };
  for (const std::string& text : configs) {
    std::filesystem::remove_all(dir);
    std::filesystem::create_directories(dir);
    write("config.json", text);
    write("model.safetensors.index.json", R"({"weight_map": {"model.norm.weight": 3}})");
    try {
      read_hf_index(dir);
      ADD_FAILURE() << text;
    } catch (const CheckpointError& e) {
      EXPECT_NE(std::string(e.what()).find(dir), std::string::npos) << e.what();
    }
  }
  std::filesystem::remove_all(dir);
}

// Every flat range of a 3-D tensor: the boxes are contiguous runs that cover it in order.
TEST(Slices, flat_ranges_become_contiguous_boxes_in_order) {
  const std::vector<int64_t> shape = {3, 4, 5};
  const at::Tensor index = at::arange(60, at::kLong).view(shape);
  for (int64_t begin = 0; begin < 60; begin += 7) {
    for (int64_t length : {1, 4, 5, 13, 20, 33}) {
      if (begin + length > 60) continue;
      const std::vector<FlatPiece> pieces = flat_range_boxes(shape, begin, length);
      EXPECT_LE(pieces.size(), 5u);
      int64_t next = begin;
      for (const FlatPiece& p : pieces) {
        EXPECT_EQ(p.flat_begin, next);
        const at::Tensor got = narrow_to(index, full_box(shape), p.box).reshape({-1});
        EXPECT_TRUE(at::equal(got, at::arange(next, next + p.box.numel(), at::kLong)))
            << "range " << begin << "+" << length << " box " << describe(p.box);
        next += p.box.numel();
      }
      EXPECT_EQ(next, begin + length);
    }
  }
}

// A fused QKV weight (12, 4) over tp = 2: rank 1 holds rows 2-3, 6-7 and 10-11. Any ZeRO
// range of its flattened shard maps to views equal to the same boxes of the global tensor.
TEST(Slices, fused_qkv_ranges_map_to_the_global_rows) {
  ParamSpec spec;
  spec.name = "h.0.attn.qkv.weight";
  spec.global_shape = {12, 4};
  spec.shard = ShardSpec{0, 3};
  const at::Tensor global = at::arange(48, at::kDouble).view({12, 4});
  for (int tp_rank = 0; tp_rank < 2; ++tp_rank) {
    const at::Tensor shard = cut_shard(spec, tp_rank, 2, global);  // (6, 4)
    for (int64_t start : {0, 3, 9}) {
      for (int64_t length : {1, 6, 15}) {
        if (start + length > 24) continue;
        const at::Tensor flat = shard.reshape({-1}).narrow(0, start, length);
        int64_t covered = 0;
        for (const auto& [view, box] : flat_range_pieces(spec, tp_rank, 2, flat, start)) {
          EXPECT_TRUE(at::equal(view, narrow_to(global, full_box({12, 4}), box))) << describe(box);
          covered += box.numel();
        }
        EXPECT_EQ(covered, length);
      }
    }
  }
  // Rank 1's whole shard is three runs of the global rows.
  const auto views = shard_views(spec, 1, 2, cut_shard(spec, 1, 2, global));
  ASSERT_EQ(views.size(), 3u);
  EXPECT_EQ(views[0].second.offsets, (std::vector<int64_t>{2, 0}));
  EXPECT_EQ(views[1].second.offsets, (std::vector<int64_t>{6, 0}));
  EXPECT_EQ(views[2].second.offsets, (std::vector<int64_t>{10, 0}));
}

// A row-parallel weight (4, 6) split on its input dimension: tp rank 1 holds columns 3-5.
TEST(Slices, row_parallel_ranges_map_to_the_global_columns) {
  ParamSpec spec;
  spec.name = "h.0.attn.proj.weight";
  spec.global_shape = {4, 6};
  spec.shard = ShardSpec{1, 1};
  const at::Tensor global = at::arange(24, at::kDouble).view({4, 6});
  const at::Tensor shard = cut_shard(spec, 1, 2, global);  // (4, 3)
  const at::Tensor flat = shard.reshape({-1}).narrow(0, 2, 7);
  int64_t covered = 0;
  for (const auto& [view, box] : flat_range_pieces(spec, 1, 2, flat, 2)) {
    EXPECT_TRUE(at::equal(view, narrow_to(global, full_box({4, 6}), box))) << describe(box);
    EXPECT_GE(box.offsets[1], 3);
    covered += box.numel();
  }
  EXPECT_EQ(covered, 7);
}

TEST(HfNames, map_both_ways_with_conv1d_weights_transposed) {
  const std::vector<std::string> ours = {
      "wte.weight",        "wpe.weight",          "ln_f.weight",       "ln_f.bias",
      "h.11.ln_1.weight",  "h.0.attn.qkv.weight", "h.0.attn.qkv.bias", "h.3.attn.proj.weight",
      "h.2.mlp.fc.weight", "h.2.mlp.proj.bias",   "h.7.ln_2.bias"};
  for (const std::string& name : ours) {
    const auto hf = to_hf_name(name);
    ASSERT_TRUE(hf) << name;
    const auto back = from_hf_name(hf->name);
    ASSERT_TRUE(back) << hf->name;
    EXPECT_EQ(back->name, name);
    EXPECT_EQ(back->transposed, hf->transposed);
  }
  EXPECT_EQ(to_hf_name("h.0.attn.qkv.weight")->name, "transformer.h.0.attn.c_attn.weight");
  EXPECT_TRUE(to_hf_name("h.0.attn.qkv.weight")->transposed);
  EXPECT_FALSE(to_hf_name("h.0.attn.qkv.bias")->transposed);
  EXPECT_EQ(to_hf_name("h.5.mlp.proj.weight")->name, "transformer.h.5.mlp.c_proj.weight");
  EXPECT_EQ(from_hf_name("h.1.mlp.c_fc.weight")->name, "h.1.mlp.fc.weight");  // no prefix
  EXPECT_FALSE(from_hf_name("lm_head.weight"));
  EXPECT_FALSE(from_hf_name("transformer.h.0.attn.bias"));
  EXPECT_FALSE(to_hf_name("optimizer.exp_avg/wte.weight"));
}

}  // namespace
}  // namespace trident::checkpoint
