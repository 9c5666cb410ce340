// Opening a source's token file under its config key, and its windows.
#include "data/source_file.h"

#include <cmath>       // std::floor
#include <cstdio>      // std::snprintf
#include <filesystem>  // std::filesystem::path::stem
#include <utility>     // std::move

namespace trident::data {
namespace {

std::string format_fraction(double f) {
  char text[32];
  std::snprintf(text, sizeof(text), "%g", f);
  return text;
}

}  // namespace

int64_t held_out_windows(int64_t windows, double fraction) {
  if (fraction <= 0) return 0;
  const auto held = static_cast<int64_t>(std::floor(fraction * static_cast<double>(windows)));
  return held < 1 ? 1 : held;
}

SourceFile open_source_file(const MixEntry& entry, int64_t vocab, int64_t seq_len,
                            double valid_fraction) {
  const std::string where = entry.key + (entry.name.empty() ? "" : " (\"" + entry.name + "\")");
  try {
    TokenFile file = TokenFile::open(entry.path);
    const int64_t n = file.size(), needed = seq_len + 1;
    if (n < needed)
      throw DataError("data file " + file.path() + " has " + format_count(n) +
                      " tokens, needs at least seq_len+1 = " + std::to_string(needed) +
                      " for one window; use a longer file or a shorter seq_len");
    file.check_vocab(vocab);
    SourceFile source{std::move(file), entry.name, entry.key, (n - 1) / seq_len, 0};
    source.held_out = held_out_windows(source.windows, valid_fraction);
    if (source.train_windows() < 1)
      throw DataError("data file " + source.file.path() + " has " + format_count(source.windows) +
                      " window(s) of seq_len = " + std::to_string(seq_len) +
                      " tokens, and data.valid_fraction = " + format_fraction(valid_fraction) +
                      " holds out " + format_count(source.held_out) +
                      ", leaving none to train on; use a longer file or a smaller "
                      "valid_fraction");
    return source;
  } catch (const DataError& e) {
    throw DataError(where + ": " + e.what());
  }
}

std::vector<MixEntry> source_entries(const std::vector<MixEntry>& mix, const std::string& single,
                                     const std::string& single_key, const std::string& mix_key) {
  std::vector<MixEntry> entries = mix;
  if (entries.empty()) entries.push_back({single, 1.0, "", single_key});
  for (size_t k = 0; k < entries.size(); ++k) {
    MixEntry& e = entries[k];
    if (e.key.empty()) e.key = mix_key + "[" + std::to_string(k) + "]";
    if (e.name.empty()) e.name = std::filesystem::path(e.path).stem().string();
    for (size_t before = 0; before < k; ++before)
      if (entries[before].name == e.name)
        throw DataError(e.key + " and " + entries[before].key + " are both named \"" + e.name +
                        "\"; give each source of a mixture its own name (name = \"...\")");
  }
  return entries;
}

std::string token_data_path(const std::string& path) { return detect_format(path).data_path; }

}  // namespace trident::data
