// Parsing, merging and counting past windows of skipped data batches.
#include "config/data_windows.h"

#include <algorithm>  // std::sort
#include <cctype>     // std::isdigit
#include <stdexcept>  // std::invalid_argument

namespace trident {

std::vector<DataWindow> merge_windows(std::vector<DataWindow> windows) {
  std::sort(windows.begin(), windows.end(), [](const DataWindow& a, const DataWindow& b) {
    return a.first < b.first || (a.first == b.first && a.last < b.last);
  });
  std::vector<DataWindow> merged;
  for (const DataWindow& w : windows) {
    if (!merged.empty() && w.first <= merged.back().last + 1)
      merged.back().last = std::max(merged.back().last, w.last);
    else
      merged.push_back(w);
  }
  return merged;
}

namespace {

int64_t parse_batch(const std::string& word, const std::string& text) {
  if (word.empty() || word.size() > 15 ||
      !std::all_of(word.begin(), word.end(), [](char c) { return std::isdigit(c) != 0; }))
    throw std::invalid_argument("\"" + text + "\": '" + word +
                                "' is not a batch number; write windows as \"FIRST-LAST\" "
                                "separated by commas, e.g. \"101-300,501-520\"");
  const int64_t n = std::stoll(word);
  if (n < 1) throw std::invalid_argument("\"" + text + "\": batches count from 1");
  return n;
}

}  // namespace

std::vector<DataWindow> parse_data_windows(const std::string& text) {
  std::vector<DataWindow> windows;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find(',', start);
    if (end == std::string::npos) end = text.size();
    const std::string item = text.substr(start, end - start);
    const size_t dash = item.find('-');
    DataWindow w;
    w.first = parse_batch(item.substr(0, dash), text);
    w.last = dash == std::string::npos ? w.first : parse_batch(item.substr(dash + 1), text);
    if (w.last < w.first)
      throw std::invalid_argument("\"" + text + "\": the window " + item +
                                  " ends before it starts");
    windows.push_back(w);
    start = end + 1;
  }
  return merge_windows(windows);
}

std::string format_data_windows(const std::vector<DataWindow>& windows) {
  std::string text;
  for (const DataWindow& w : windows)
    text += (text.empty() ? "" : ",") + std::to_string(w.first) + "-" + std::to_string(w.last);
  return text;
}

int64_t data_batch_of_step(const std::vector<DataWindow>& merged, int64_t step) {
  // Every window at or below the batch found so far pushes it past the window.
  int64_t batch = step;
  for (const DataWindow& w : merged) {
    if (w.first > batch) break;
    batch += w.last - w.first + 1;
  }
  return batch;
}

}  // namespace trident
