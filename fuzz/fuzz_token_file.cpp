// libFuzzer harness: the token-file readers (llm.c, raw uint16/uint32, Megatron .bin/.idx)
// on any bytes. The first byte chooses a single file or a Megatron pair (the next two bytes
// give where the .idx ends). Bad input must end in a DataError, never a crash.
#include <unistd.h>  // getpid

#include <algorithm>  // std::min
#include <cstddef>
#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

#include "data/data_error.h"  // DataError
#include "data/token_file.h"  // TokenFile

namespace {

void write(const std::string& path, const uint8_t* data, size_t size) {
  std::ofstream(path, std::ios::binary)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 3) return 0;
  const std::string base = "/tmp/trident_fuzz_tokens_" + std::to_string(::getpid());
  std::string path;
  std::vector<std::string> files;
  if (data[0] & 1) {  // Megatron: base.idx and base.bin
    const size_t idx_size = std::min<size_t>(size - 3, (data[1] << 8) | data[2]);
    write(base + ".idx", data + 3, idx_size);
    write(base + ".bin", data + 3 + idx_size, size - 3 - idx_size);
    files = {base + ".idx", base + ".bin"};
    path = base + (data[0] & 2 ? ".bin" : "");
  } else {
    path = base + (data[0] & 2 ? ".bin" : ".tok");
    write(path, data + 1, size - 1);
    files = {path};
  }
  try {
    const trident::data::TokenFile f = trident::data::TokenFile::open(path);
    f.scan();
    f.check_vocab(50257);
    std::vector<int32_t> out(16);
    const int64_t n = std::min<int64_t>(16, f.size());
    if (n > 0) f.read(f.size() - n, n, out.data());
  } catch (const trident::data::DataError&) {
    // the expected end of bad input
  }
  for (const std::string& p : files) std::remove(p.c_str());
  return 0;
}
