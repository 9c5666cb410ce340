// Preemption: the signals a scheduler sends before it kills a job (SIGTERM, SIGINT,
// SIGUSR1) are caught and only flagged; the ranks agree on the flag at a step boundary
// through a collective, save, and exit. A second signal ends the rank at once.
#pragma once
#include <string>

#include "config/choices.h"  // PreemptSignals

namespace trident {
class Communicator;

/// Flags SIGTERM, SIGINT and SIGUSR1 from the start of a command that trains, before MPI
/// starts and the config is read: a scheduler may preempt right after the allocation, and
/// a rank killed by the default action then would end the job unsaved with code 143. The
/// PreemptionGuard made later keeps what was caught.
void catch_preemption_early();

/// Installs the handlers of `signals` for its lifetime (one guard at a time). The handler
/// only records the signal (async-signal-safe); a second one restores the default action
/// and raises it again, which ends the rank — and, through mpirun, the job. A signal that
/// catch_preemption_early() flagged and `signals` leaves out takes its default action now.
class PreemptionGuard {
 public:
  explicit PreemptionGuard(PreemptSignals signals);
  ~PreemptionGuard();
  PreemptionGuard(const PreemptionGuard&) = delete;
  PreemptionGuard& operator=(const PreemptionGuard&) = delete;

  /// The signal this rank caught, or 0.
  int caught() const;

 private:
  PreemptSignals signals_;
};

/// What the ranks agree on at a step boundary, in one small all-reduce (max).
struct BoundaryAgreement {
  int signal = 0;           // a preemption signal some rank caught, or 0
  double save_state = 0.0;  // the background save's state (AsyncCheckpointer::local_state)
};

/// The step boundary's one collective over `world`: every rank's caught signal and
/// background-save state, the largest of each. Call at the same boundary on every rank.
BoundaryAgreement agree_at_boundary(Communicator& world, int caught_signal, double save_state);

/// "SIGTERM", "SIGINT", "SIGUSR1", else "signal N".
std::string signal_name(int signo);

}  // namespace trident
