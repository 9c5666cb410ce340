// libFuzzer harness: the safetensors reader (header length, JSON header, dtypes, shapes,
// offsets, metadata) on any bytes, then a view of every tensor. Bad input must end in a
// CheckpointError (InputError) naming the file, never a crash or another error.
#include <unistd.h>  // getpid

#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>

#include "checkpoint/safetensors.h"  // SafetensorsFile, CheckpointError

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = "/tmp/trident_fuzz_safetensors_" + std::to_string(::getpid());
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    const trident::checkpoint::SafetensorsFile f(path);
    for (const auto& [name, entry] : f.entries()) {
      const at::Tensor t = f.view(name);
      (void)t.numel();
    }
    (void)f.find("missing");
  } catch (const trident::InputError&) {
    // the expected end of bad input
  }
  return 0;
}
