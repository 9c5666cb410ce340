// `trident inspect CKPT`: prints a checkpoint's index — step, trainer state, model, layout,
// files and every tensor with its shape, dtype, slice count and size; --verify checks the
// checksum of every file. Needs no MPI.
#include <cstdio>
#include <iostream>

#include "checkpoint/index.h"        // open_checkpoint
#include "checkpoint/safetensors.h"  // SafetensorsFile, dtype_from_name
#include "checkpoint/slices.h"       // shape_text
#include "cli/args.h"
#include "cli/commands.h"

namespace trident::cli {

namespace {

void print_index(const checkpoint::CheckpointIndex& index) {
  using nlohmann::json;
  if (index.hugging_face) {
    std::cout << "checkpoint " << index.dir
              << " (Hugging Face GPT-2: model.safetensors + config.json)\n";
  } else {
    std::cout << "checkpoint " << index.dir << " (trident format version " << index.format_version
              << ")\nstep " << index.step << "\n";
    std::cout << "trainer: " << index.trainer.dump() << "\n";
    std::cout << "optimizer: " << index.optimizer.dump() << "\n";
    const json& l = index.layout;
    std::cout << "layout: dp " << l.value("dp", 0) << " x pp " << l.value("pp", 0) << " x tp "
              << l.value("tp", 0) << " = " << l.value("world_size", 0) << " ranks, ZeRO stage "
              << l.value("zero_stage", 0) << "\n";
  }
  std::cout << "model: " << index.model.dump() << "\n";
  int64_t total = 0;
  for (const auto& [name, f] : index.files) total += f.bytes;
  std::cout << "files: " << index.files.size() << ", " << total << " bytes\n";
  std::cout << "tensors: " << index.tensors.size() << "\n";
  std::printf("  %-44s %-16s %-5s %6s %12s\n", "name", "shape", "dtype", "slices", "bytes");
  for (const auto& [name, t] : index.tensors) {
    int64_t numel = 1;
    for (int64_t d : t.shape) numel *= d;
    const int64_t bytes =
        numel * static_cast<int64_t>(c10::elementSize(checkpoint::dtype_from_name(t.dtype)));
    std::printf("  %-44s %-16s %-5s %6zu %12lld\n", name.c_str(),
                checkpoint::shape_text(t.shape).c_str(), t.dtype.c_str(), t.slices.size(),
                static_cast<long long>(bytes));
  }
}

int verify_files(const checkpoint::CheckpointIndex& index) {
  int bad = 0;
  for (const auto& [file, info] : index.files) {
    const std::string path = index.path_of(file);
    std::string verdict = "ok";
    try {
      const checkpoint::SafetensorsFile f(path, {info.bytes, info.xxh64});
      if (info.xxh64.empty()) verdict = "ok (no checksum recorded)";
    } catch (const std::exception& e) {
      verdict = e.what();
    }
    if (verdict.rfind("ok", 0) != 0) ++bad;
    std::cout << "  " << file << ": " << verdict << "\n";
  }
  return bad;
}

}  // namespace

int cmd_inspect(const Args& args) {
  const checkpoint::CheckpointIndex index = checkpoint::open_checkpoint(args.positional[0], "");
  print_index(index);
  if (!args.has("verify")) return 0;
  std::cout << "verify:\n";
  const int bad = verify_files(index);
  if (bad == 0) return 0;
  std::cerr << "trident: error: " << bad << " of " << index.files.size() << " files of "
            << index.dir << " fail verification\n";
  return 1;
}

}  // namespace trident::cli
