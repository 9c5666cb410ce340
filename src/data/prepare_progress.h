// prepare-data's progress line: bytes read of the total, MB/s and tokens, at most every
// interval; "\r" updates of one line on a terminal, plain lines otherwise.
#pragma once

#include <chrono>   // std::chrono::steady_clock
#include <cstddef>  // size_t
#include <cstdint>  // int64_t
#include <cstdio>   // std::FILE
#include <string>   // std::string

namespace trident::data {

/// Prints "prepare-data: 12.3/45.6 MB (27%), 8.1 MB/s, 3,456,789 tokens".
class Progress {
 public:
  /// `out` nullptr prints nothing; total_bytes 0 leaves out the total and percentage.
  /// Whether `out` is a terminal (isatty) picks "\r" updates or "\n" lines.
  Progress(std::FILE* out, int64_t total_bytes, double interval_s);
  /// Prints if at least interval_s passed since the last line.
  void update(int64_t bytes, int64_t tokens);
  /// Prints the last line (always) and, on a terminal, ends it.
  void finish(int64_t bytes, int64_t tokens);
  /// The line for these counts, without "\r" or "\n".
  std::string line(int64_t bytes, int64_t tokens) const;

 private:
  using Clock = std::chrono::steady_clock;
  void print(int64_t bytes, int64_t tokens);

  std::FILE* out_;
  int64_t total_bytes_;
  double interval_s_;
  bool terminal_ = false;
  Clock::time_point start_, last_;
  size_t last_width_ = 0;
};

}  // namespace trident::data
