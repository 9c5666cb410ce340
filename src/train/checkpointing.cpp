// Saving and resuming a Trainer through the checkpoint module.
#include "train/checkpointing.h"

#include <algorithm>   // std::sort
#include <filesystem>  // listing step_<N> directories
#include <iostream>    // the warning of a skipped checkpoint
#include <regex>       // std::regex
#include <sstream>     // std::istringstream

#include "checkpoint/index.h"           // read_index, open_checkpoint
#include "checkpoint/writer.h"          // layout_json
#include "parallel/agreement.h"         // run_agreed, JobError
#include "parallel/parallel_context.h"  // ParallelContext::world
#include "train/lr_schedule.h"          // LrSchedule, lr_schedule_of
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

namespace {

/// "dp2 x pp2 x tp2, ZeRO 2, 8 ranks" of an index's layout record.
std::string describe_layout(const nlohmann::json& layout) {
  std::ostringstream out;
  out << "dp" << layout.value("dp", 0) << " x pp" << layout.value("pp", 0) << " x tp"
      << layout.value("tp", 0);
  if (layout.value("cp", 1) > 1) out << " x cp" << layout.value("cp", 1);
  if (layout.value("ep", 1) > 1) out << " (ep" << layout.value("ep", 1) << ")";
  out << ", ZeRO " << layout.value("zero_stage", 0) << ", " << layout.value("world_size", 0)
      << " ranks";
  return out.str();
}

}  // namespace

std::string layout_change(const std::string& path, const std::string& checkpoint_dir,
                          const TrainConfig& config) {
  const checkpoint::CheckpointIndex index = checkpoint::open_checkpoint(path, checkpoint_dir);
  if (index.hugging_face || !index.layout.is_object()) return "";
  const nlohmann::json now = checkpoint::layout_json(config);
  const char* keys[] = {"dp", "pp", "tp", "ep", "cp", "zero_stage", "world_size"};
  // Checkpoints from before expert or context parallelism record no ep or cp: it was 1.
  if (std::all_of(std::begin(keys), std::end(keys),
                  [&](const char* k) { return index.layout.value(k, 1) == now.value(k, 1); }))
    return "";
  return "the checkpoint was saved by " + describe_layout(index.layout) +
         "; this run continues as " + describe_layout(now) +
         " with the same model and optimizer state (checkpoints are layout-free)";
}

namespace {

/// The schedule an index's trainer object records; indexes from before the schedule keys
/// name their cosine "linear_warmup_cosine".
LrSchedule saved_schedule(const nlohmann::json& j, const LrSchedule& now) {
  LrSchedule s = now;
  const std::optional<LrScheduleKind> kind = parse_choice<LrScheduleKind>(j.value("kind", ""));
  s.kind = kind ? *kind : LrScheduleKind::kCosine;
  s.lr = j.value("lr", now.lr);
  s.min_lr = j.value("min_lr", now.min_lr);
  s.warmup_steps = j.value("warmup_steps", now.warmup_steps);
  s.total_steps = j.value("total_steps", now.total_steps);
  s.decay_fraction = j.value("decay_fraction", now.decay_fraction);
  const std::optional<DecayShape> shape =
      parse_choice<DecayShape>(j.value("decay_shape", std::string(name_of(now.decay_shape))));
  if (shape) s.decay_shape = *shape;
  return s;
}

std::string describe_schedule(const LrSchedule& s) {
  std::string text =
      std::string(name_of(s.kind)) + " over train.steps = " + std::to_string(s.total_steps);
  if (s.kind == LrScheduleKind::kWsd)
    text += " (decay after step " + std::to_string(s.total_steps - s.decay_steps()) + ")";
  return text;
}

}  // namespace

std::string schedule_change(const std::string& path, const std::string& checkpoint_dir,
                            const TrainConfig& config) {
  const checkpoint::CheckpointIndex index = checkpoint::open_checkpoint(path, checkpoint_dir);
  if (index.hugging_face || !index.trainer.contains("lr_schedule")) return "";
  const LrSchedule now = lr_schedule_of(config.optimizer, config.train.steps);
  const LrSchedule saved = saved_schedule(index.trainer["lr_schedule"], now);
  const int64_t next = index.step + 1;
  if (saved.at(next) == now.at(next) && describe_schedule(saved) == describe_schedule(now))
    return "";
  std::ostringstream text;
  text << "the checkpoint was saved on " << describe_schedule(saved) << "; this run follows "
       << describe_schedule(now) << ": step " << next << " trains at lr " << now.at(next)
       << " (the saved schedule's " << saved.at(next) << ")";
  return text.str();
}

std::string roll_back(Trainer& trainer, ParallelContext& ctx, const std::string& checkpoint_dir) {
  return load_newest(trainer, ctx, checkpoint_dir, /*good_only=*/true);
}

}  // namespace trident
