// The token-file source: sequence n = batch * G + index of a data batch goes to a source
// by the mixture schedule, and to a window of that source by its epoch's permutation.
#include "data/file_source.h"

#include <cstdio>   // std::snprintf
#include <utility>  // std::move
#include <vector>   // std::vector

#include "common/counter_rng.h"       // random_u64
#include "data/mix_schedule.h"        // MixSchedule
#include "data/source_file.h"         // SourceFile, open_source_file
#include "data/window_permutation.h"  // permute_window, epoch_key

namespace trident::data {
namespace {

class FileSource : public TokenSource {
 public:
  FileSource(std::vector<SourceFile> files, MixSchedule schedule, const SourceOptions& o)
      : files_(std::move(files)),
        schedule_(std::move(schedule)),
        order_(o.order),
        seed_(o.seed),
        seq_len_(o.seq_len),
        global_batch_(o.global_batch) {}

  void sequence(int64_t step, int64_t index, int64_t length, int32_t* out) const override {
    const SequenceOrigin where = origin(step, index);
    files_[static_cast<size_t>(where.source)].file.read(where.offset, length, out);
  }

  SequenceOrigin origin(int64_t step, int64_t index) const override {
    if (step < 0 || index < 0 || index >= global_batch_)
      throw DataError("sequence " + std::to_string(index) + " of data batch " +
                      std::to_string(step) + " is outside a batch of " +
                      std::to_string(global_batch_) + " sequences");
    const MixSchedule::Pick pick = schedule_.at(step * global_batch_ + index);
    const SourceFile& f = files_[static_cast<size_t>(pick.source)];
    const int64_t W = f.train_windows();
    SequenceOrigin o;
    o.source = pick.source;
    o.name = f.name;
    o.epoch = pick.index / W;
    o.epoch_fraction = static_cast<double>(pick.index) / static_cast<double>(W);
    if (order_ == DataOrder::kEpochs) {
      // Keyed by the source's place in the mixture, not its name or path: the order must
      // not change with where a node keeps the file (each rank may read its own copy).
      const uint64_t key = epoch_key(seed_, "source " + std::to_string(pick.source), o.epoch);
      o.window = static_cast<int64_t>(
          permute_window(key, static_cast<uint64_t>(pick.index % W), static_cast<uint64_t>(W)));
      o.offset = o.window * seq_len_;
    } else {
      // Any start whose window ends inside the training part: the whole file when nothing
      // is held out (as before epochs existed), else up to the first held-out window.
      const int64_t end = f.held_out == 0 ? f.file.size() : W * seq_len_ + 1;
      const auto starts = static_cast<uint64_t>(end - seq_len_);
      o.offset = static_cast<int64_t>(random_u64(sequence_key(seed_, step, index), 0) % starts);
    }
    return o;
  }

  std::vector<std::string> source_names() const override {
    std::vector<std::string> names;
    for (const SourceFile& f : files_) names.push_back(f.name);
    return names;
  }

  std::optional<double> loss_floor() const override { return std::nullopt; }

  std::string describe() const override {
    const char* order =
        order_ == DataOrder::kEpochs ? "read in epochs" : "windows drawn with replacement";
    if (files_.size() == 1) return file_line(files_[0]) + "; " + order;
    std::string line =
        "mixture of " + std::to_string(files_.size()) + " token files (" + order + "):";
    const int64_t period = schedule_.period();
    for (size_t k = 0; k < files_.size(); ++k) {
      char share[32];
      std::snprintf(
          share, sizeof(share), "%.1f%%",
          100.0 * static_cast<double>(schedule_.slots()[k]) / static_cast<double>(period));
      line += (k ? "; " : " ") + files_[k].name + " " + share + " = " + file_line(files_[k]);
    }
    return line;
  }

 private:
  std::string file_line(const SourceFile& f) const {
    const TokenFile& file = f.file;
    std::string line = std::string(format_name(file.format())) + " " + file.path();
    if (file.format() == TokenFormat::kMegatron)
      line += " (" + std::string(dtype_name(file.dtype())) + ", " +
              format_count(*file.documents()) + " documents)";
    line += ": " + format_count(file.size()) + " tokens, " + format_count(f.windows) +
            " windows of " + std::to_string(seq_len_);
    if (f.held_out > 0) line += ", the last " + format_count(f.held_out) + " held out";
    return line;
  }

  std::vector<SourceFile> files_;
  MixSchedule schedule_;
  DataOrder order_;
  uint64_t seed_;
  int64_t seq_len_;
  int64_t global_batch_;
};

}  // namespace

std::unique_ptr<TokenSource> open_file_source(const SourceOptions& options) {
  if (options.global_batch < 1)
    throw DataError(
        "a token-file source needs the global batch size (train.global_batch_size), "
        "got " +
        std::to_string(options.global_batch));
  const std::vector<MixEntry> entries =
      source_entries(options.mix, options.source, "data.source", "data.mix");
  std::vector<double> weights;
  std::vector<std::string> keys;
  for (const MixEntry& e : entries) {
    weights.push_back(e.weight);
    keys.push_back(e.key + ".weight");
  }
  MixSchedule schedule(weights, keys);  // bad weights fail before any file is scanned
  std::vector<SourceFile> files;
  for (const MixEntry& e : entries)
    files.push_back(open_source_file(e, options.vocab, options.seq_len, options.valid_fraction));
  return std::make_unique<FileSource>(std::move(files), std::move(schedule), options);
}

}  // namespace trident::data
