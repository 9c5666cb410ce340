// RunSaver: synchronous saves timed as a whole, background saves through AsyncCheckpointer.
#include "train/run_saver.h"

#include <chrono>
#include <cstdio>
#include <fstream>  // std::ifstream of `latest`
#include <string>   // std::getline

#include "checkpoint/async_save.h"      // AsyncCheckpointer
#include "config/config.h"              // TrainConfig
#include "parallel/parallel_context.h"  // ParallelContext::rank
#include "train/checkpointing.h"        // save_checkpoint, training_state
#include "train/trainer.h"              // Trainer

namespace trident {

RunSaver::RunSaver(const TrainConfig& config, ParallelContext& ctx)
    : ctx_(ctx), dir_(config.checkpoint.dir), keep_last_(config.checkpoint.keep_last) {
  if (enabled() && config.checkpoint.async)
    async_ = std::make_unique<AsyncCheckpointer>(ctx, dir_, keep_last_);
}

RunSaver::~RunSaver() = default;

void RunSaver::save(Trainer& trainer) {
  if (!enabled()) return;
  last_step_ = trainer.completed_steps();
  if (async_) {
    if (auto done = async_->start(training_state(trainer)))
      report(done->path, done->stall_s, done->elapsed_s, true);
    return;
  }
  const auto t0 = std::chrono::steady_clock::now();
  const std::string path = save_checkpoint(trainer, ctx_, dir_, keep_last_);
  const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  report(path, s, s, false);
}

double RunSaver::local_state() const { return async_ ? async_->local_state() : 0.0; }

void RunSaver::advance(double agreed) {
  if (!async_) return;
  if (auto done = async_->advance(agreed)) report(done->path, done->stall_s, done->elapsed_s, true);
}

void RunSaver::finish() {
  if (!async_) return;
  if (auto done = async_->finish()) report(done->path, done->stall_s, done->elapsed_s, true);
}

void RunSaver::reject(int64_t step) {
  if (!enabled() || last_step_ != step) return;
  finish();
  const std::string moved = reject_checkpoint(ctx_, dir_, step);
  last_step_ = -1;
  // The newest save is now the one `latest` names (none when it is gone).
  std::string latest;
  std::getline(std::ifstream(dir_ + "/latest"), latest);
  last_path_ = latest.empty() ? "" : dir_ + "/" + latest;
  if (ctx_.rank() == 0 && !moved.empty())
    std::printf("the weights of step %lld gave a non-finite loss: moved its checkpoint to %s\n",
                static_cast<long long>(step), moved.c_str());
}

void RunSaver::report(const std::string& path, double stall_s, double elapsed_s, bool background) {
  last_path_ = path;
  saves_ += 1;
  stall_s_ += stall_s;
  if (ctx_.rank() != 0) return;
  if (background)
    std::printf("saved %s (training stalled %.4f s; written over %.2f s in the background)\n",
                path.c_str(), stall_s, elapsed_s);
  else
    std::printf("saved %s (%.4f s)\n", path.c_str(), stall_s);
  std::fflush(stdout);
}

}  // namespace trident
