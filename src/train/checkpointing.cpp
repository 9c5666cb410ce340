// Saving and resuming a Trainer through the checkpoint module.
#include "train/checkpointing.h"

#include <algorithm>   // std::sort
#include <filesystem>  // listing step_<N> directories
#include <iostream>    // the warning of a skipped checkpoint
#include <regex>       // std::regex
#include <sstream>     // std::istringstream

#include "checkpoint/index.h"           // read_index
#include "parallel/agreement.h"         // run_agreed, JobError
#include "parallel/parallel_context.h"  // ParallelContext::world
#include "train/trainer.h"              // Trainer

namespace trident {

TrainingState training_state(Trainer& trainer) {
  return TrainingState{trainer.model(), trainer.optimizer(), trainer.config(),
                       trainer.completed_steps(), &trainer.progress()};
}

std::string save_checkpoint(Trainer& trainer, ParallelContext& ctx, const std::string& dir,
                            int64_t keep_last) {
  return save_checkpoint(training_state(trainer), ctx, dir, keep_last);
}

void load_checkpoint(Trainer& trainer, ParallelContext& ctx, const std::string& path,
                     const std::string& checkpoint_dir) {
  trainer.set_completed_steps(load_checkpoint(training_state(trainer), ctx, path, checkpoint_dir));
  trainer.restore_progress();
}

namespace {

/// The step_<N> directories of `dir`, newest first.
std::vector<std::string> checkpoints_newest_first(const std::string& dir) {
  namespace fs = std::filesystem;
  static const std::regex step_dir("step_([0-9]+)");
  std::vector<std::pair<long long, std::string>> steps;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return {};
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string name = e.path().filename().string();
    std::smatch m;
    if (e.is_directory() && std::regex_match(name, m, step_dir))
      steps.emplace_back(std::stoll(m[1]), e.path().string());
  }
  std::sort(steps.rbegin(), steps.rend());
  std::vector<std::string> out;
  for (const auto& s : steps) out.push_back(s.second);
  return out;
}

/// Whether the spike guard marked the checkpoint in `path` as one to roll back to (an index
/// that cannot be read is left for load_checkpoint to report).
bool marked_good(const std::string& path) {
  try {
    return read_progress(checkpoint::read_index(path).trainer).good;
  } catch (const std::exception&) {
    return true;
  }
}

/// The newest checkpoint of `checkpoint_dir` that loads (of those the guard marked good,
/// when `good_only`); see resume_auto.
std::string load_newest(Trainer& trainer, ParallelContext& ctx, const std::string& checkpoint_dir,
                        bool good_only) {
  Communicator& world = ctx.world();
  // Rank 0 lists, so that every rank tries the same checkpoints in the same order.
  std::string listing;
  if (world.rank() == 0)
    for (const std::string& path : checkpoints_newest_first(checkpoint_dir))
      if (!good_only || marked_good(path)) listing += path + "\n";
  listing = world.broadcast_bytes(listing, 0);
  std::istringstream lines(listing);
  std::string path, failures;
  while (std::getline(lines, path)) {
    try {
      // load_checkpoint checks every file before it changes anything.
      load_checkpoint(trainer, ctx, path, checkpoint_dir);
      return path;
    } catch (const JobError& e) {
      if (!e.input_error()) throw;
      failures += "\n  " + path + ": " + e.what();
      if (world.rank() == 0)
        std::cerr << "warning: checkpoint.load = \"auto\": skipping " << path << ": " << e.what()
                  << "\n  trying the previous checkpoint" << std::endl;
    }
  }
  if (!failures.empty())
    throw CheckpointError("checkpoint.load = \"auto\": no checkpoint in " + checkpoint_dir +
                          " loads:" + failures +
                          "\nRemove the damaged ones (or the directory, to start afresh).");
  return "";
}

}  // namespace

std::string resume_auto(Trainer& trainer, ParallelContext& ctx, const std::string& checkpoint_dir) {
  return load_newest(trainer, ctx, checkpoint_dir, /*good_only=*/false);
}

std::string roll_back(Trainer& trainer, ParallelContext& ctx, const std::string& checkpoint_dir) {
  return load_newest(trainer, ctx, checkpoint_dir, /*good_only=*/true);
}

}  // namespace trident
