// AsyncCheckpointer: a writer thread per save on every rank, agreement on "all written" in
// the step boundary's all-reduce, and rank 0's commit on a second thread. No collective of
// its own on the way: ranks leave their index records as files in the temporary directory.
#include "checkpoint/async_save.h"

#include <algorithm>  // std::sort
#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <vector>

#include "checkpoint/index.h"           // write_file_atomically
#include "checkpoint/save_parts.h"      // rank_pieces, snapshot, stream_rank_file, commit_save
#include "common/stopwatch.h"           // seconds_since
#include "parallel/agreement.h"         // run_agreed
#include "parallel/parallel_context.h"  // ParallelContext::world, coord
#include "zero/zero_optimizer.h"        // ZeroOptimizer::states_in_tier

namespace trident {

namespace fs = std::filesystem;
using namespace checkpoint;
using Clock = std::chrono::steady_clock;

namespace {

std::string record_name(const GridCoord& c) {
  return "record-dp" + std::to_string(c.dp) + "-pp" + std::to_string(c.pp) + "-tp" +
         std::to_string(c.tp) + ".json";
}

/// Rank 0's commit: every rank's record from `tmp` (removed once read), in name order.
std::vector<std::string> take_records(const std::string& tmp, int world_size) {
  std::vector<fs::path> files;
  for (const auto& e : fs::directory_iterator(tmp))
    if (e.path().filename().string().rfind("record-", 0) == 0) files.push_back(e.path());
  if (static_cast<int>(files.size()) != world_size)
    throw CheckpointError(tmp + " holds " + std::to_string(files.size()) + " rank records of " +
                          std::to_string(world_size) + "; a rank's background write was lost");
  std::sort(files.begin(), files.end());
  std::vector<std::string> records;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    records.emplace_back(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    fs::remove(f);
  }
  return records;
}

}  // namespace

struct AsyncCheckpointer::Save {
  SaveTarget target;
  CheckpointIndex index;  // rank 0: described at the snapshot, completed at the commit
  std::vector<StoredPiece> pieces;
  Clock::time_point started;
  double stall_s = 0.0;

  std::thread writer;
  std::atomic<bool> written{false};
  std::exception_ptr write_error;

  std::thread committer;  // rank 0
  std::atomic<bool> committed{false};
  std::exception_ptr commit_error;
};

AsyncCheckpointer::AsyncCheckpointer(ParallelContext& ctx, std::string dir, int64_t keep_last)
    : ctx_(ctx), dir_(std::move(dir)), keep_last_(keep_last) {
  std::random_device rd;
  token_ = ctx.world().broadcast_bytes(std::to_string(rd()), 0);
}

AsyncCheckpointer::~AsyncCheckpointer() {
  if (!save_) return;
  if (save_->writer.joinable()) save_->writer.join();
  if (save_->committer.joinable()) save_->committer.join();
}

std::unique_ptr<AsyncSaveReport> AsyncCheckpointer::start(const TrainingState& state) {
  std::unique_ptr<AsyncSaveReport> previous = finish();
  const auto t0 = Clock::now();
  auto save = std::make_unique<Save>();
  save->started = t0;
  save->target = SaveTarget{dir_, dir_ + "/.tmp_step_" + std::to_string(state.step) + "_" + token_,
                            state.step};
  // Each rank creates the directory it writes into (the same name everywhere) and keeps
  // any error for the boundary's agreement.
  try {
    fs::create_directories(save->target.tmp);
    if (ctx_.world().rank() == 0) save->index = describe_state(state);
    if (state.optimizer.states_in_tier()) {
      // A snapshot would hold the tier's states whole in memory: the rank's file is
      // streamed from the tier now, and only the commit is left to the background.
      const std::string record = stream_rank_file(save->target, state, ctx_);
      write_file_atomically(save->target.tmp + "/" + record_name(ctx_.coord()), record);
      save->written = true;
    } else {
      save->pieces = snapshot(rank_pieces(state, ctx_));
    }
  } catch (...) {
    save->write_error = std::current_exception();
    save->written = true;
  }
  save_ = std::move(save);
  Save* s = save_.get();
  if (!s->written) {
    const GridCoord c = ctx_.coord();
    s->writer = std::thread([s, c] {
      try {
        check_finite(s->pieces, s->target.step);  // on the snapshot, off the training thread
        const std::string record = write_rank_file(s->target, c.dp, c.pp, c.tp, s->pieces);
        write_file_atomically(s->target.tmp + "/" + record_name(c), record);
      } catch (...) {
        s->write_error = std::current_exception();
      }
      s->pieces.clear();  // the host snapshot is no longer needed
      s->written = true;
    });
  }
  phase_ = Phase::kWriting;
  s->stall_s += seconds_since(t0);
  return previous;
}

double AsyncCheckpointer::local_state() const {
  if (phase_ == Phase::kWriting) return save_->written ? (save_->write_error ? 2.0 : 0.0) : 1.0;
  if (phase_ == Phase::kCommitting && ctx_.world().rank() == 0)
    return save_->committed ? (save_->commit_error ? 2.0 : 0.0) : 1.0;
  return 0.0;
}

std::unique_ptr<AsyncSaveReport> AsyncCheckpointer::advance(double agreed) {
  if (phase_ == Phase::kIdle || agreed == 1.0) return nullptr;
  const auto t0 = Clock::now();
  std::unique_ptr<AsyncSaveReport> report;
  const bool ok = agreed == 0.0;  // else some rank failed: agree on its message
  if (phase_ == Phase::kWriting) {
    hand_to_commit(ok);
    save_->stall_s += seconds_since(t0);
  } else {
    report = wait_for_commit(ok);
    report->stall_s += seconds_since(t0);
  }
  return report;
}

std::unique_ptr<AsyncSaveReport> AsyncCheckpointer::finish() {
  if (phase_ == Phase::kIdle) return nullptr;
  const auto t0 = Clock::now();
  if (phase_ == Phase::kWriting) hand_to_commit(false);  // waits for this rank's writer
  std::unique_ptr<AsyncSaveReport> report = wait_for_commit(false);
  report->stall_s += seconds_since(t0);
  return report;
}

void AsyncCheckpointer::hand_to_commit(bool known_ok) {
  Communicator& world = ctx_.world();
  Save* s = save_.get();
  if (s->writer.joinable()) s->writer.join();
  if (!known_ok) {
    try {
      run_agreed(world, [s] {
        if (s->write_error) std::rethrow_exception(s->write_error);
      });
    } catch (...) {
      if (world.rank() == 0) discard_save(s->target);  // every writer has joined
      throw;
    }
  }
  if (world.rank() == 0) {
    const int64_t keep_last = keep_last_;
    const int ranks = world.size();
    s->committer = std::thread([s, keep_last, ranks] {
      try {
        commit_save(s->target, std::move(s->index), take_records(s->target.tmp, ranks), keep_last);
      } catch (...) {
        s->commit_error = std::current_exception();
      }
      s->committed = true;
    });
  }
  phase_ = Phase::kCommitting;
}

std::unique_ptr<AsyncSaveReport> AsyncCheckpointer::wait_for_commit(bool known_ok) {
  Save* s = save_.get();
  if (s->committer.joinable()) s->committer.join();
  phase_ = Phase::kIdle;
  std::unique_ptr<Save> done = std::move(save_);
  if (!known_ok) {
    try {
      run_agreed(ctx_.world(), [&done] {
        if (done->commit_error) std::rethrow_exception(done->commit_error);
      });
    } catch (...) {
      if (ctx_.world().rank() == 0) discard_save(done->target);
      throw;
    }
  }
  auto report = std::make_unique<AsyncSaveReport>();
  report->path = done->target.final_dir();
  report->step = done->target.step;
  report->stall_s = done->stall_s;
  report->elapsed_s = seconds_since(done->started);
  return report;
}

}  // namespace trident
