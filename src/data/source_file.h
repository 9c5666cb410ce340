// One token file of a training source or an evaluation set: opened under the config key
// that named it, checked against the vocabulary, and cut into non-overlapping windows
// of which the last valid_fraction are held out for validation.
#pragma once

#include <cstdint>  // int64_t
#include <string>   // std::string
#include <vector>   // std::vector

#include "data/token_file.h"    // TokenFile
#include "data/token_source.h"  // MixEntry

namespace trident::data {

/// A checked token file and its windows: window w is tokens [w*T, w*T + T] (T+1 tokens,
/// sharing its last token with the next window's first, as Megatron's GPT dataset does).
struct SourceFile {
  TokenFile file;
  std::string name;      ///< the source's name
  std::string key;       ///< the config key that named it, for messages
  int64_t windows = 0;   ///< W_all = floor((tokens - 1) / T)
  int64_t held_out = 0;  ///< the last held_out windows are for validation only

  /// The windows training reads: 0..train_windows()-1.
  int64_t train_windows() const { return windows - held_out; }
};

/// The windows data.valid_fraction holds out of `windows`: floor(fraction * windows), and
/// at least one when the fraction is positive.
int64_t held_out_windows(int64_t windows, double fraction);

/// Opens entry.path (any format TokenFile reads), scans every token against `vocab`, and
/// holds out the last windows by `valid_fraction`. Throws DataError starting with
/// entry.key when the file is missing or corrupt, has a token >= vocab, is shorter than one
/// window, or has no training window left.
SourceFile open_source_file(const MixEntry& entry, int64_t vocab, int64_t seq_len,
                            double valid_fraction);

/// The files of a source: `mix`, or the one file `single` under the key `single_key`;
/// each without a key gets "<mix_key>[k]", and without a name its file's stem. Throws
/// DataError when two share a name.
std::vector<MixEntry> source_entries(const std::vector<MixEntry>& mix, const std::string& single,
                                     const std::string& single_key, const std::string& mix_key);

/// The file that holds entry.path's tokens, for telling whether two paths name one file.
std::string token_data_path(const std::string& path);

}  // namespace trident::data
