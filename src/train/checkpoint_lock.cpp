// CheckpointDirLock: the lock file is written whole beside its name and linked (a new lock)
// or renamed (a stale one) into place, so that a reader never sees half of one.
#include "train/checkpoint_lock.h"

#include <fcntl.h>   // open
#include <signal.h>  // kill
#include <unistd.h>  // gethostname, getpid, link, unlink, fsync, write, close

#include <cerrno>      // errno, EEXIST, EPERM
#include <cstdlib>     // std::getenv
#include <cstring>     // std::strerror
#include <filesystem>  // std::filesystem
#include <fstream>     // std::ifstream
#include <nlohmann/json.hpp>
#include <sstream>  // std::ostringstream

#include "config/input_error.h"  // InputError

namespace trident {

namespace fs = std::filesystem;

namespace {

/// How long a lock's holder on this host may take to end before the lock is refused.
constexpr double kTeardownGraceS = 5.0;

/// Field 22 of /proc/<pid>/stat (the start time), or 0 when it cannot be read.
long long start_time(long long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end_of_name = stat.rfind(')');  // the program's name may hold spaces
  if (end_of_name == std::string::npos) return 0;
  std::istringstream fields(stat.substr(end_of_name + 2));
  std::string field;
  for (int k = 3; k <= 22 && fields >> field; ++k)
    if (k == 22) return std::stoll(field);
  return 0;
}

/// Whether /proc/<pid>/stat shows the process ended but not yet reaped (a zombie, or dead).
bool zombie(long long pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  const size_t end_of_name = stat.rfind(')');
  if (end_of_name == std::string::npos || end_of_name + 2 >= stat.size()) return false;
  const char state = stat[end_of_name + 2];
  return state == 'Z' || state == 'X';
}

std::string to_json(const LockHolder& h) {
  return nlohmann::json{{"host", h.host}, {"pid", h.pid}, {"start", h.start}, {"job", h.job}}
             .dump() +
         "\n";
}

/// The holder the lock file at `path` names; false when it is missing or unreadable.
bool read_holder(const std::string& path, LockHolder& h) {
  std::ifstream in(path);
  if (!in) return false;
  const auto j = nlohmann::json::parse(in, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object()) return false;
  h.host = j.value("host", "");
  h.pid = j.value("pid", 0LL);
  h.start = j.value("start", 0LL);
  h.job = j.value("job", "");
  return !h.host.empty() && h.pid > 0;
}

bool same(const LockHolder& a, const LockHolder& b) {
  return a.host == b.host && a.pid == b.pid && a.start == b.start && a.job == b.job;
}

/// Whether `h` is a run that has ended: its process is gone from this host, or it is an
/// earlier start of this Slurm job.
bool stale(const LockHolder& h, const LockHolder& me) {
  if (!me.job.empty() && h.job == me.job) return true;
  if (h.host != me.host) return false;  // another host's process cannot be checked
  if (::kill(static_cast<pid_t>(h.pid), 0) != 0 && errno != EPERM) return true;
  if (zombie(h.pid)) return true;
  const long long start = start_time(h.pid);
  return h.start != 0 && start != 0 && start != h.start;  // the pid is another process's
}

/// Whether `h` ends within `seconds`: a job restarted at once after a crash may find its
/// last ranks still being torn down by the launcher.
bool ends_soon(const LockHolder& h, const LockHolder& me, double seconds) {
  if (h.host != me.host) return stale(h, me);
  for (double waited = 0; waited < seconds; waited += 0.1) {
    if (stale(h, me)) return true;
    ::usleep(100000);
  }
  return stale(h, me);
}

/// Writes `text` to a new file `path` and syncs it; throws InputError naming it.
void write_new(const std::string& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  const bool ok = fd >= 0 &&
                  ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
                  ::fsync(fd) == 0;
  const int err = errno;
  if (fd >= 0) ::close(fd);
  if (!ok)
    throw InputError("cannot write the lock file " + path + ": " + std::strerror(err) +
                     " (checkpoint.dir must be a writable directory)");
}

}  // namespace

std::string LockHolder::describe() const {
  return "host " + host + ", pid " + std::to_string(pid) + (job.empty() ? "" : ", job " + job);
}

LockHolder this_process() {
  LockHolder me;
  char host[256] = {};
  ::gethostname(host, sizeof(host) - 1);
  me.host = host;
  me.pid = ::getpid();
  me.start = start_time(me.pid);
  if (const char* job = std::getenv("SLURM_JOB_ID")) me.job = job;
  return me;
}

CheckpointDirLock::CheckpointDirLock(const std::string& dir)
    : dir_(dir), path_(dir + "/" + kLockFile) {
  std::error_code ec;
  created_dir_ = fs::create_directories(dir, ec);
  if (ec)
    throw InputError("cannot create checkpoint.dir " + dir + ": " + ec.message() +
                     " (set checkpoint.dir to a writable path)");
  const LockHolder me = this_process();
  const std::string mine = path_ + "." + std::to_string(me.pid);
  write_new(mine, to_json(me));
  // link() fails when the name exists, atomically (NFS included): the first run gets it.
  if (::link(mine.c_str(), path_.c_str()) == 0) {
    ::unlink(mine.c_str());
    return;
  }
  const int err = errno;
  LockHolder holder;
  if (err != EEXIST) {
    ::unlink(mine.c_str());
    throw InputError("cannot create the lock file " + path_ + ": " + std::strerror(err) +
                     " (checkpoint.dir must be a writable directory)");
  }
  if (!read_holder(path_, holder)) {
    ::unlink(mine.c_str());
    throw InputError("checkpoint.dir " + dir + " holds a lock file " + path_ +
                     " that names no run; if no run saves into " + dir + ", remove " + path_);
  }
  if (ends_soon(holder, me, kTeardownGraceS)) {
    fs::rename(mine, path_, ec);  // takes it over
    LockHolder now;
    if (!ec && read_holder(path_, now) && same(now, me)) {
      taken_over_ = holder.describe();
      return;
    }
    if (!ec) holder = now;  // another run took it over first
  }
  ::unlink(mine.c_str());
  throw InputError("checkpoint.dir " + dir + " is in use by another run (" + holder.describe() +
                   "; its lock " + path_ +
                   "): two runs saving into one directory overwrite each other's checkpoints. "
                   "Wait for that run to end, or give this one another checkpoint.dir; if it "
                   "has ended (on another host, where its process cannot be checked), remove " +
                   path_);
}

CheckpointDirLock::~CheckpointDirLock() {
  LockHolder holder;
  if (read_holder(path_, holder) && same(holder, this_process())) ::unlink(path_.c_str());
  std::error_code ec;
  if (created_dir_ && fs::is_empty(dir_, ec) && !ec) fs::remove(dir_, ec);  // only when empty
}

}  // namespace trident
