// libFuzzer harness: a Hugging Face directory (GPT-2 or Llama config.json, the sharded
// model.safetensors.index.json, model.safetensors) on any bytes. The input is split at lines
// "=====" into config.json, then model.safetensors.index.json (absent when empty), then the
// weights (absent when empty): model.safetensors, or with an index its one shard
// model-00001-of-00001.safetensors. Bad input must end in a CheckpointError
// (InputError), never a crash or another error.
#include <unistd.h>  // getpid

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "checkpoint/checkpoint.h"  // CheckpointError (an InputError)
#include "checkpoint/hf.h"          // read_hf_index
#include "checkpoint/index.h"       // CheckpointIndex

namespace fs = std::filesystem;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  const std::string sep = "\n=====\n";
  std::vector<std::string> parts;
  size_t at = 0;
  while (parts.size() < 2) {
    const size_t end = text.find(sep, at);
    if (end == std::string::npos) break;
    parts.push_back(text.substr(at, end - at));
    at = end + sep.size();
  }
  parts.push_back(text.substr(std::min(at, text.size())));
  parts.resize(3);

  const std::string dir = "/tmp/trident_fuzz_hf_" + std::to_string(::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  const std::string names[] = {
      "config.json", "model.safetensors.index.json",
      parts[1].empty() ? "model.safetensors" : "model-00001-of-00001.safetensors"};
  for (int k = 0; k < 3; ++k)
    if (k == 0 || !parts[k].empty())
      std::ofstream(dir + "/" + names[k], std::ios::binary) << parts[k];
  try {
    if (trident::checkpoint::is_hf_directory(dir)) {
      const trident::checkpoint::CheckpointIndex index = trident::checkpoint::read_hf_index(dir);
      (void)index.tensors.size();
    }
  } catch (const trident::InputError&) {
    // the expected end of bad input
  }
  return 0;
}
