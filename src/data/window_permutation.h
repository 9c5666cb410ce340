// A keyed bijection of [0, W): the order of a source's windows within one epoch. A
// balanced Feistel network on the next even power of two, with cycle-walking back into
// range, so the window at any position is computed alone, with nothing stored.
#pragma once

#include <cstdint>  // uint64_t
#include <string>   // std::string

namespace trident::data {

/// The window at position `position` (< count) of the order keyed by `key`: a
/// permutation of [0, count) for every key. count = 1 gives 0.
uint64_t permute_window(uint64_t key, uint64_t position, uint64_t count);

/// The key of epoch `epoch` of the source labelled `name` (FileSource passes its index in
/// the mixture, never a path): each (seed, source, epoch) gets its own order.
uint64_t epoch_key(uint64_t seed, const std::string& name, int64_t epoch);

}  // namespace trident::data
