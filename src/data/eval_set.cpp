// Building the evaluation set: which windows of which files, fixed once; and reading them.
#include "data/eval_set.h"

#include <filesystem>  // std::filesystem::equivalent
#include <utility>     // std::move

#include "common/counter_rng.h"  // hash_name, random_u64
#include "data/markov_chain.h"   // MarkovChain
#include "data/mix_schedule.h"   // MixSchedule
#include "data/source_file.h"    // SourceFile, open_source_file, source_entries

namespace trident::data {
namespace {

bool is_synthetic(const SourceOptions& train) {
  return train.mix.empty() && train.source == "synthetic";
}

/// Whether two user paths lead to one token file (Megatron's X, X.bin and X.idx do).
bool same_file(const std::string& a, const std::string& b) {
  try {
    std::error_code ec;
    return std::filesystem::equivalent(token_data_path(a), token_data_path(b), ec);
  } catch (const DataError&) {
    return false;  // a missing training file is reported when the training source opens
  }
}

/// Refuses an evaluation file that the run also trains on.
void check_disjoint(const MixEntry& eval, const SourceOptions& train) {
  if (is_synthetic(train)) return;
  for (const MixEntry& t : source_entries(train.mix, train.source, "data.source", "data.mix")) {
    if (!same_file(eval.path, t.path)) continue;
    throw DataError(eval.key + " = \"" + eval.path + "\" is also a training file (" + t.key +
                    "), so the evaluation would measure windows the run trains on; leave "
                    "eval.source empty and set data.valid_fraction (e.g. 0.01) to hold out the "
                    "last windows of each training file, or give a file the run does not train "
                    "on");
  }
}

}  // namespace

const EvalSequence& EvalSet::at(int64_t i) const {
  if (i < 0 || i >= size())
    throw DataError("evaluation sequence " + std::to_string(i) + " does not exist (the set has " +
                    std::to_string(size()) + ")");
  return sequences_[static_cast<size_t>(i)];
}

void EvalSet::sequence(int64_t i, int64_t length, int32_t* out) const {
  const EvalSequence& s = at(i);
  if (chain_) {
    chain_->sample(random_u64(hash_name(seed_, "data.eval"), static_cast<uint64_t>(i)), length,
                   out);
    return;
  }
  (*files_)[static_cast<size_t>(s.source)].file.read(s.offset, length, out);
}

std::string EvalSet::describe() const {
  std::vector<int64_t> counts(names_.size(), 0);
  for (const EvalSequence& s : sequences_) ++counts[static_cast<size_t>(s.source)];
  std::string line = std::to_string(size()) + " sequences of " + origin_;
  for (size_t k = 0; k < names_.size() && names_.size() > 1; ++k)
    line += (k ? ", " : ": ") + std::to_string(counts[k]) + " of " + names_[k];
  return line;
}

EvalSet open_eval_set(const EvalSetOptions& options) {
  EvalSet set;
  if (options.sequences <= 0) return set;
  const SourceOptions& train = options.train;
  const bool held_out = options.mix.empty() && options.source.empty();
  set.seed_ = train.seed;
  if (held_out && is_synthetic(train)) {
    set.chain_ = std::make_shared<MarkovChain>(train.vocab, train.markov_successors, train.seed);
    set.names_ = {"synthetic"};
    set.sequences_.assign(static_cast<size_t>(options.sequences), EvalSequence{0, -1});
    set.origin_ = "the synthetic chain (draws no training step makes)";
    return set;
  }
  const std::vector<MixEntry> entries =
      held_out ? source_entries(train.mix, train.source, "data.source", "data.mix")
               : source_entries(options.mix, options.source, "eval.source", "eval.mix");
  std::vector<double> weights;
  std::vector<std::string> keys;
  for (const MixEntry& e : entries) {
    weights.push_back(e.weight);
    keys.push_back(e.key + ".weight");
  }
  const MixSchedule schedule(weights, keys);
  auto files = std::make_shared<std::vector<SourceFile>>();
  for (const MixEntry& e : entries) {
    if (!held_out) check_disjoint(e, train);
    files->push_back(
        open_source_file(e, train.vocab, train.seq_len, held_out ? train.valid_fraction : 0.0));
    set.names_.push_back(e.name);
  }
  // S_k: how many of the set's sequences each source gives.
  std::vector<int64_t> per_source(entries.size(), 0);
  for (int64_t i = 0; i < options.sequences; ++i)
    ++per_source[static_cast<size_t>(schedule.at(i).source)];
  for (size_t k = 0; k < entries.size(); ++k) {
    const SourceFile& f = (*files)[k];
    const int64_t available = held_out ? f.held_out : f.windows;
    if (per_source[k] <= available) continue;
    const std::string part =
        held_out ? (f.held_out == 0 ? "no held-out windows (data.valid_fraction = 0)"
                                    : "only " + format_count(available) + " held-out windows")
                 : "only " + format_count(available) + " windows";
    const std::string fix = held_out ? "raise data.valid_fraction, lower eval.sequences, or set "
                                       "eval.source to a file of its own"
                                     : "lower eval.sequences or use a longer file";
    throw DataError("eval.sequences = " + std::to_string(options.sequences) + " takes " +
                    std::to_string(per_source[k]) + " windows of " + f.key + " (\"" + f.name +
                    "\", " + f.file.path() + "), which has " + part +
                    " of seq_len = " + std::to_string(train.seq_len) + " tokens; " + fix);
  }
  for (int64_t i = 0; i < options.sequences; ++i) {
    const MixSchedule::Pick pick = schedule.at(i);
    const SourceFile& f = (*files)[static_cast<size_t>(pick.source)];
    const int64_t count = held_out ? f.held_out : f.windows;
    const int64_t first = held_out ? f.train_windows() : 0;
    const int64_t window =
        first + pick.index * count / per_source[static_cast<size_t>(pick.source)];
    set.sequences_.push_back({pick.source, window * train.seq_len});
  }
  set.files_ = std::move(files);
  set.origin_ = held_out ? "held-out windows (data.valid_fraction)" : "eval.source windows";
  return set;
}

}  // namespace trident::data
