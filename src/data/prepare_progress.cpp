// The progress line of prepare-data.
#include "data/prepare_progress.h"

#include <unistd.h>  // isatty, fileno

#include <algorithm>  // std::max

#include "data/token_file.h"  // format_count

namespace trident::data {
namespace {

std::string megabytes(int64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof(text), "%.1f", static_cast<double>(bytes) / 1e6);
  return text;
}

}  // namespace

Progress::Progress(std::FILE* out, int64_t total_bytes, double interval_s)
    : out_(out), total_bytes_(total_bytes), interval_s_(interval_s), start_(Clock::now()) {
  last_ = start_;
  terminal_ = out_ && ::isatty(fileno(out_));
}

std::string Progress::line(int64_t bytes, int64_t tokens) const {
  const double seconds = std::chrono::duration<double>(Clock::now() - start_).count();
  std::string text = "prepare-data: " + megabytes(bytes);
  if (total_bytes_ > 0) {
    char percent[16];
    std::snprintf(percent, sizeof(percent), "%.0f%%", 100.0 * bytes / total_bytes_);
    text += "/" + megabytes(total_bytes_) + " MB (" + percent + ")";
  } else {
    text += " MB";
  }
  char rate[32];
  std::snprintf(rate, sizeof(rate), "%.1f", bytes / 1e6 / std::max(seconds, 1e-6));
  return text + ", " + rate + " MB/s, " + format_count(tokens) + " tokens";
}

void Progress::print(int64_t bytes, int64_t tokens) {
  const std::string text = line(bytes, tokens);
  if (terminal_) {
    // Blanks cover the rest of a longer previous line.
    const size_t pad = last_width_ > text.size() ? last_width_ - text.size() : 0;
    std::fprintf(out_, "\r%s%s", text.c_str(), std::string(pad, ' ').c_str());
    last_width_ = text.size();
  } else {
    std::fprintf(out_, "%s\n", text.c_str());
  }
  std::fflush(out_);
  last_ = Clock::now();
}

void Progress::update(int64_t bytes, int64_t tokens) {
  if (!out_) return;
  if (std::chrono::duration<double>(Clock::now() - last_).count() < interval_s_) return;
  print(bytes, tokens);
}

void Progress::finish(int64_t bytes, int64_t tokens) {
  if (!out_) return;
  print(bytes, tokens);
  if (terminal_) std::fprintf(out_, "\n");
  std::fflush(out_);
}

}  // namespace trident::data
