// Windows of skipped data: which batches of the data stream a run leaves out, and which
// batch a step then trains on. The data of batch d is a pure function of (seed, d), so a
// run that skips a window trains on exactly the batches another run saw, shifted.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trident {

/// The batches first..last (1-based, inclusive) of the data stream, left out.
struct DataWindow {
  int64_t first = 0;
  int64_t last = 0;
  bool operator==(const DataWindow& o) const { return first == o.first && last == o.last; }
};

/// Sorted, with overlapping and adjacent windows joined.
std::vector<DataWindow> merge_windows(std::vector<DataWindow> windows);

/// Parses "101-300,501-520" (or "" for none; "7" is "7-7"); throws std::invalid_argument
/// with a message that says what is wrong.
std::vector<DataWindow> parse_data_windows(const std::string& text);

/// "101-300,501-520": as parse_data_windows reads it.
std::string format_data_windows(const std::vector<DataWindow>& windows);

/// The batch that step `step` (1-based) trains on: the step-th batch outside `merged`
/// (merge_windows' output).
int64_t data_batch_of_step(const std::vector<DataWindow>& merged, int64_t step);

}  // namespace trident
