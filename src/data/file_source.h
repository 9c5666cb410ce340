// Token files as a training source: one file or a weighted mixture, read in epochs of
// permuted non-overlapping windows or as windows drawn with replacement. Internal to
// src/data: open_source builds it.
#pragma once

#include <memory>  // std::unique_ptr

#include "data/token_source.h"  // TokenSource, SourceOptions

namespace trident::data {

/// Opens every file of `options` (options.mix, or options.source alone) and builds the
/// source. Throws DataError naming the key and the file.
std::unique_ptr<TokenSource> open_file_source(const SourceOptions& options);

}  // namespace trident::data
