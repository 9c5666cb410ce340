// Signal handlers that only set a flag, and the agreement on it at a step boundary.
#include "train/preemption.h"

#include <ATen/ATen.h>  // at::full
#include <signal.h>     // sigaction
#include <unistd.h>     // getppid

#include <algorithm>  // std::find
#include <csignal>    // sig_atomic_t
#include <fstream>    // /proc/<pid>/comm
#include <string>
#include <vector>

#include "parallel/communicator.h"  // Communicator::all_reduce

namespace trident {

namespace {

volatile std::sig_atomic_t g_caught = 0;
// The pid of Open MPI's launcher (mpirun, orted) when it is this rank's parent, else 0.
volatile pid_t g_launcher = 0;

void die_of(int signo) {
  ::signal(signo, SIG_DFL);
  ::raise(signo);
}

void on_signal(int signo, siginfo_t* info, void*) {
  // Open MPI's launcher sends SIGTERM (then SIGKILL) to the ranks left when one rank died
  // or the launcher itself was told to stop: the job is being torn down, and the ranks
  // could not agree anyway. SIGUSR1 from it is a forwarded request to save.
  const bool teardown =
      signo != SIGUSR1 && g_launcher != 0 && info != nullptr && info->si_pid == g_launcher;
  // A second signal: whoever sent it wants the rank gone now, unsaved.
  if (teardown || g_caught != 0) {
    die_of(signo);
    return;
  }
  g_caught = signo;
}

/// The parent's pid when the parent is Open MPI's launcher (read once, outside a handler).
pid_t open_mpi_launcher() {
  const pid_t parent = ::getppid();
  std::ifstream comm("/proc/" + std::to_string(parent) + "/comm");
  std::string name;
  std::getline(comm, name);
  for (const char* launcher : {"mpirun", "mpiexec", "orterun", "orted", "prterun", "prted"})
    if (name == launcher) return parent;
  return 0;
}

std::vector<int> signals_of(PreemptSignals which) {
  switch (which) {
    case PreemptSignals::kTermIntUsr1:
      return {SIGTERM, SIGINT, SIGUSR1};
    case PreemptSignals::kUsr1:
      return {SIGUSR1};
    case PreemptSignals::kNone:
      return {};
  }
  return {};
}

void install_handlers(const std::vector<int>& signals) {
  g_launcher = open_mpi_launcher();
  struct sigaction action {};
  action.sa_sigaction = on_signal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART | SA_SIGINFO;  // interrupted system calls resume
  for (int signo : signals) ::sigaction(signo, &action, nullptr);
}

}  // namespace

void catch_preemption_early() { install_handlers(signals_of(PreemptSignals::kTermIntUsr1)); }

PreemptionGuard::PreemptionGuard(PreemptSignals signals) : signals_(signals) {
  const std::vector<int> mine = signals_of(signals_);
  for (int signo : signals_of(PreemptSignals::kTermIntUsr1)) {
    if (std::find(mine.begin(), mine.end(), signo) != mine.end()) continue;
    ::signal(signo, SIG_DFL);
    if (g_caught == signo) die_of(signo);  // what it would have done uncaught
  }
  install_handlers(mine);
}

PreemptionGuard::~PreemptionGuard() {
  for (int signo : signals_of(signals_)) ::signal(signo, SIG_DFL);
}

int PreemptionGuard::caught() const { return g_caught; }

BoundaryAgreement agree_at_boundary(Communicator& world, int caught_signal, double save_state) {
  at::Tensor flags = at::tensor({static_cast<double>(caught_signal), save_state}, at::kDouble);
  world.all_reduce(flags, ReduceOp::kMax)->wait();
  return BoundaryAgreement{static_cast<int>(flags[0].item<double>()), flags[1].item<double>()};
}

std::string signal_name(int signo) {
  switch (signo) {
    case SIGTERM:
      return "SIGTERM";
    case SIGINT:
      return "SIGINT";
    case SIGUSR1:
      return "SIGUSR1";
    default:
      return "signal " + std::to_string(signo);
  }
}

}  // namespace trident
