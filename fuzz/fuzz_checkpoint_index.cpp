// libFuzzer harness: a checkpoint's index.json (parse, index_from_json: model, trainer,
// optimizer, layout, files, tensors) on any bytes, read from a temporary checkpoint
// directory as a resume would. Bad input must end in a CheckpointError (InputError), never a
// crash or another error.
#include <unistd.h>  // getpid

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>

#include "checkpoint/checkpoint.h"  // CheckpointError (an InputError)
#include "checkpoint/index.h"       // read_index, weights_only

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string dir = "/tmp/trident_fuzz_index_" + std::to_string(::getpid());
  std::filesystem::create_directories(dir);
  std::ofstream(dir + "/index.json", std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    const trident::checkpoint::CheckpointIndex index = trident::checkpoint::read_index(dir);
    (void)trident::checkpoint::weights_only(index);
    (void)trident::checkpoint::index_to_json(index).dump();
  } catch (const trident::InputError&) {
    // the expected end of bad input
  }
  return 0;
}
