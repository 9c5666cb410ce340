// The lock that keeps two jobs from saving into one checkpoint.dir: the file
// `<dir>/.lock`, naming its holder (host, pid, job id), held by rank 0 for the whole run.
#pragma once
#include <string>

namespace trident {

/// The lock file's name inside checkpoint.dir.
constexpr const char* kLockFile = ".lock";

/// Who holds a lock: the host, the pid and its start time (to tell a reused pid), and the
/// job id (SLURM_JOB_ID, "" outside Slurm).
struct LockHolder {
  std::string host;
  long long pid = 0;
  long long start = 0;  // /proc/<pid>/stat's start time, in clock ticks since boot
  std::string job;

  /// "host node1, pid 4242, job 1234" (no job outside Slurm).
  std::string describe() const;
};

/// This process as a lock holder.
LockHolder this_process();

/// Takes the lock of `dir` (creating the directory) for its lifetime, or throws InputError
/// naming the run that holds it and the ways out. A lock left behind by a run that has
/// ended is taken over: on this host, one whose process no longer runs (or whose pid now
/// belongs to a later process); on any host, one of this Slurm job (a requeued job).
class CheckpointDirLock {
 public:
  explicit CheckpointDirLock(const std::string& dir);
  /// Removes the file while it still names this process, and the directory when this lock
  /// created it and nothing else came into it (a run that failed before its first save
  /// leaves nothing behind).
  ~CheckpointDirLock();
  CheckpointDirLock(const CheckpointDirLock&) = delete;
  CheckpointDirLock& operator=(const CheckpointDirLock&) = delete;

  /// The holder of the stale lock taken over, described; "" when there was none.
  const std::string& taken_over() const { return taken_over_; }

 private:
  std::string dir_, path_;
  std::string taken_over_;
  bool created_dir_ = false;
};

}  // namespace trident
