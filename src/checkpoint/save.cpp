// save_checkpoint and its phases: each rank writes the slices it owns into its own
// safetensors file in a temporary directory; rank 0 gathers the slice lists, writes the
// index, and commits the directory with a rename before updating `latest`
// (see docs/checkpoints.md).
#include <ATen/ATen.h>  // Tensor::reshape, narrow

#include <algorithm>   // std::sort, std::remove_if
#include <cstdio>      // std::printf of a pruning warning
#include <filesystem>  // std::filesystem
#include <random>      // std::random_device
#include <regex>       // std::regex

#include "checkpoint/checkpoint.h"
#include "checkpoint/checksum.h"     // to_hex
#include "checkpoint/index.h"        // CheckpointIndex, write_file_atomically
#include "checkpoint/ownership.h"    // stores_param
#include "checkpoint/safetensors.h"  // write_safetensors, fsync_directory
#include "checkpoint/save_parts.h"
#include "checkpoint/writer.h"          // write_pieces, add_records, slice_file_name
#include "common/fault_injection.h"     // kill_at_checkpoint_point
#include "config/config.h"              // to_toml
#include "models/model_stage.h"         // ModelStage
#include "parallel/agreement.h"         // run_agreed
#include "parallel/parallel_context.h"  // ParallelContext::world
#include "zero/zero_optimizer.h"        // ZeroOptimizer

namespace trident {
namespace checkpoint {

namespace fs = std::filesystem;

namespace {

/// The tensors this rank stores of one window of its optimizer state: its owned range of
/// each parameter and optimizer state, cut into boxes of the global tensors.
std::vector<StoredPiece> window_pieces(const StateWindow& window, const TrainingState& state,
                                       const ParallelContext& ctx) {
  const ZeroOptimizer& opt = state.optimizer;
  const int tp_rank = ctx.coord().tp, tp = ctx.grid().tp(), dp_rank = ctx.coord().dp;
  const bool separate_master = opt.state_dtype() != state.model.params().dtype();
  const auto& params = state.model.params().params();
  std::vector<StoredPiece> out;
  for (const auto& [i, v] : window) {
    const Parameter& p = params[i];
    if (!stores_param(p.spec, tp_rank, dp_rank, opt.options().stage, ctx.grid().ep())) continue;
    auto add = [&](const std::string& tensor, const at::Tensor& flat) {
      for (auto& [view, box] : flat_range_pieces(p.spec, tp_rank, tp, flat, v.start))
        out.push_back({tensor, view, box, p.spec.global_shape});
    };
    add(p.spec.name, v.param);
    add(exp_avg_name(p.spec.name), v.exp_avg);
    if (v.exp_avg_sq.defined()) add(exp_avg_sq_name(p.spec.name), v.exp_avg_sq);  // not Muon's
    if (separate_master) add(master_name(p.spec.name), v.master);
  }
  return out;
}

/// The mid_file fault point: after a file's first tensor.
std::function<void(size_t)> mid_file_fault(int64_t step) {
  return [step](size_t k) {
    if (k == 0) fault::kill_at_checkpoint_point("mid_file", step);
  };
}

std::string random_suffix() {
  std::random_device rd;
  return to_hex((static_cast<uint64_t>(rd()) << 32) | rd()).substr(0, 10);
}

/// Removes `path`, an old checkpoint or what an interrupted save left (`why`). A failure (a mount
/// point, NFS's .nfs* file of a file still open) is a warning naming it: the save that prunes has
/// been committed, so the run goes on.
void remove_old(const fs::path& path, const std::string& why) {
  std::error_code ec;
  fs::remove_all(path, ec);
  if (!ec) return;
  std::printf("warning: cannot remove %s (%s): %s; remove it by hand\n", path.c_str(), why.c_str(),
              ec.message().c_str());
  std::fflush(stdout);
}

/// Keeps the newest `keep_last` step directories (never `current`), and removes what
/// interrupted saves left behind. Never throws: what it cannot remove is a warning.
void prune(const std::string& dir, int64_t keep_last, const std::string& current) {
  static const std::regex step_dir("step_([0-9]+)");
  std::vector<std::pair<long long, fs::path>> steps;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string name = it->path().filename().string();
    std::smatch m;
    std::error_code type_ec;
    if (!it->is_directory(type_ec)) continue;
    if (std::regex_match(name, m, step_dir))
      steps.emplace_back(std::stoll(m[1]), it->path());
    else if (name.rfind(".tmp_step_", 0) == 0 || name.rfind(".old_step_", 0) == 0)
      remove_old(it->path(), "left by an interrupted save");
  }
  if (ec) {
    std::printf("warning: cannot list %s to prune it: %s\n", dir.c_str(), ec.message().c_str());
    std::fflush(stdout);
    return;
  }
  if (keep_last <= 0) return;
  std::sort(steps.begin(), steps.end());
  int64_t excess = static_cast<int64_t>(steps.size()) - keep_last;
  const std::string why = "pruning to checkpoint.keep_last = " + std::to_string(keep_last);
  for (const auto& [n, path] : steps) {
    if (excess <= 0) break;
    if (path.filename() == current) continue;
    remove_old(path, why);  // the newest keep_last stay even when an older one cannot go
    --excess;
  }
}

/// The learning-rate schedule's keys, for a reader of the index (a resumed run follows its
/// own config: the schedule is a function of the step and the config's keys).
nlohmann::json lr_schedule_json(const TrainConfig& c) {
  const OptimizerConfig& o = c.optimizer;
  nlohmann::json j = {{"kind", name_of(o.schedule)},
                      {"lr", o.lr},
                      {"min_lr", o.min_lr},
                      {"warmup_steps", o.warmup_steps},
                      {"total_steps", c.train.steps}};
  if (o.schedule == LrScheduleKind::kWsd) {
    j["decay_fraction"] = o.decay_fraction;
    j["decay_shape"] = name_of(o.decay_shape);
  }
  return j;
}

}  // namespace

void discard_save(const SaveTarget& target) {
  std::error_code ec;
  fs::remove_all(target.tmp, ec);
  if (ec)
    std::fprintf(stderr, "warning: cannot remove %s, left by the failed save of step %lld: %s\n",
                 target.tmp.c_str(), static_cast<long long>(target.step), ec.message().c_str());
}

/// Everything of the index but the tensors and files.
CheckpointIndex describe_state(const TrainingState& state) {
  const TrainConfig& c = state.config;
  const ZeroOptimizer& opt = state.optimizer;
  CheckpointIndex index;
  index.step = state.step;
  index.model = model_json(c);
  index.layout = layout_json(c);
  // Data and learning rate are functions of the step; nothing draws random numbers while
  // training and there is no loss scale, so the step is the whole of the trainer's state.
  index.trainer = {{"step", index.step},
                   {"data_position", index.step},
                   {"lr_schedule", lr_schedule_json(c)},
                   {"rng", "none"},
                   {"loss_scale", nullptr}};
  if (state.progress) write_progress(*state.progress, index.trainer);
  const bool separate_master = opt.state_dtype() != state.model.params().dtype();
  index.optimizer = {{"kind", state.optimizer.optimizer_name()},
                     {"step_count", opt.step_count()},
                     {"beta1", c.optimizer.beta1},
                     {"beta2", c.optimizer.beta2},
                     {"eps", c.optimizer.eps},
                     {"weight_decay", c.optimizer.weight_decay},
                     {"zero_stage", c.parallel.zero_stage},
                     {"state_dtype", dtype_name(opt.state_dtype())},
                     {"master", separate_master ? "optimizer.master" : "parameters"}};
  index.config_toml = to_toml(c);
  return index;
}

std::vector<StoredPiece> rank_pieces(const TrainingState& state, const ParallelContext& ctx) {
  // The views of a tier's window point into its ring, which the next window reuses.
  TORCH_CHECK(!state.optimizer.states_in_tier(),
              "rank_pieces: the states are in the nvme tier; stream them (stream_rank_file)");
  std::vector<StoredPiece> out;
  state.optimizer.visit_states(
      [&](const StateWindow& w) {
        for (StoredPiece& p : window_pieces(w, state, ctx)) out.push_back(std::move(p));
      },
      StateAccess::kRead);
  return out;
}

void check_finite(const std::vector<StoredPiece>& pieces, int64_t step) {
  for (const StoredPiece& p : pieces) {
    if (!at::isFloatingType(p.data.scalar_type())) continue;
    if (at::isfinite(p.data).all().item<bool>()) continue;
    throw std::runtime_error("refusing to save step " + std::to_string(step) + ": " + p.tensor +
                             " holds a non-finite value (the run diverged; the checkpoints "
                             "already saved are kept)");
  }
}

std::vector<StoredPiece> snapshot(const std::vector<StoredPiece>& pieces) {
  std::vector<StoredPiece> copies = pieces;
  for (StoredPiece& p : copies) p.data = p.data.to(at::kCPU, /*non_blocking=*/false, /*copy=*/true);
  return copies;
}

SaveTarget begin_save(Communicator& world, const std::string& dir, int64_t step) {
  SaveTarget target{dir, "", step};
  run_agreed(world, [&] {
    if (world.rank() != 0) return;
    fs::create_directories(dir);
    target.tmp = dir + "/.tmp_step_" + std::to_string(step) + "_" + random_suffix();
    fs::create_directory(target.tmp);
  });
  target.tmp = world.broadcast_bytes(target.tmp, 0);
  return target;
}

std::string write_rank_file(const SaveTarget& target, int dp, int pp, int tp,
                            const std::vector<StoredPiece>& pieces) {
  return write_pieces(target.tmp, slice_file_name(dp, pp, tp), pieces, mid_file_fault(target.step))
      .dump();
}

std::string stream_rank_file(const SaveTarget& target, const TrainingState& state,
                             const ParallelContext& ctx) {
  ZeroOptimizer& opt = state.optimizer;
  std::vector<StoredPiece> layout;
  opt.visit_states(
      [&](const StateWindow& w) {
        for (StoredPiece& p : window_pieces(w, state, ctx)) layout.push_back(std::move(p));
      },
      StateAccess::kLayout);
  const PieceSource source = [&](size_t size, const std::function<void(const at::Tensor&)>& emit) {
    opt.visit_states(
        [&](const StateWindow& w) {
          std::vector<StoredPiece> pieces = window_pieces(w, state, ctx);
          pieces.erase(std::remove_if(pieces.begin(), pieces.end(),
                                      [&](const StoredPiece& p) {
                                        return static_cast<size_t>(p.data.element_size()) != size;
                                      }),
                       pieces.end());
          check_finite(pieces, target.step);
          for (const StoredPiece& p : pieces) emit(p.data);
        },
        StateAccess::kRead);
  };
  const GridCoord& c = ctx.coord();
  return write_streamed_pieces(target.tmp, slice_file_name(c.dp, c.pp, c.tp), layout, source,
                               mid_file_fault(target.step))
      .dump();
}

void commit_save(const SaveTarget& target, CheckpointIndex index,
                 const std::vector<std::string>& records, int64_t keep_last) {
  const int64_t step = target.step;
  const std::string final_name = target.final_name(), final_dir = target.final_dir();
  const std::string& dir = target.dir;
  add_records(index, records);
  fault::kill_at_checkpoint_point("before_index", step);
  write_file_atomically(target.tmp + "/" + kIndexFile, index_to_json(index).dump(1));
  fault::kill_at_checkpoint_point("before_rename", step);
  std::string old;
  if (fs::exists(final_dir)) {  // a second save of the same step replaces the first
    old = dir + "/.old_" + final_name + "_" + random_suffix();
    fs::rename(final_dir, old);
  }
  fs::rename(target.tmp, final_dir);
  fsync_directory(dir);
  fault::kill_at_checkpoint_point("before_latest", step);
  write_file_atomically(dir + "/" + kLatestFile, final_name + "\n");
  if (!old.empty()) fs::remove_all(old);
  prune(dir, keep_last, final_name);
}

}  // namespace checkpoint

using namespace checkpoint;

std::string reject_checkpoint(ParallelContext& ctx, const std::string& dir, int64_t step) {
  const std::string name = "step_" + std::to_string(step);
  std::string rejected;
  run_agreed(ctx.world(), [&] {
    if (ctx.world().rank() != 0 || !fs::is_directory(dir + "/" + name)) return;
    rejected = dir + "/rejected_" + name;
    fs::remove_all(rejected);
    fs::rename(dir + "/" + name, rejected);
    fsync_directory(dir);
    static const std::regex step_dir("step_([0-9]+)");
    long long newest = -1;
    for (const auto& e : fs::directory_iterator(dir)) {
      std::smatch m;
      const std::string n = e.path().filename().string();
      if (e.is_directory() && std::regex_match(n, m, step_dir))
        newest = std::max(newest, std::stoll(m[1]));
    }
    if (newest >= 0)
      write_file_atomically(dir + "/" + kLatestFile, "step_" + std::to_string(newest) + "\n");
    else
      fs::remove(dir + "/" + kLatestFile);
  });
  return ctx.world().broadcast_bytes(rejected, 0);
}

std::string save_checkpoint(const TrainingState& state, ParallelContext& ctx,
                            const std::string& dir, int64_t keep_last) {
  Communicator& comm = ctx.world();
  const SaveTarget target = begin_save(comm, dir, state.step);
  try {
    std::string record;
    run_agreed(comm, [&] { record = stream_rank_file(target, state, ctx); });
    const std::vector<std::string> records = comm.gather_bytes(record, 0);
    run_agreed(comm, [&] {
      if (comm.rank() == 0) commit_save(target, describe_state(state), records, keep_last);
    });
  } catch (...) {
    // Every rank is here, its writing over: rank 0 frees the room the next try needs.
    if (comm.rank() == 0) discard_save(target);
    throw;
  }
  return target.final_dir();
}

}  // namespace trident
