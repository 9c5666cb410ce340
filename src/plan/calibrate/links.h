// Link measurements for the planner through trident's communicator, the path training's
// messages take: exchanges between pairs of ranks, back to back or between computation.
#pragma once
#include <cstdint>  // int64_t

namespace trident {
class Communicator;
}  // namespace trident

namespace trident::calibrate {

// `budget` scales each measurement's timing, as in compute.h.

/// Seconds per exchange of `bytes` each way with `partner` (a rank of `world`; itself when
/// it has none) — a send and a receive posted together, both waited on — averaged over,
/// and the trials agreed between, the ranks of `timing` (those measuring; collective over
/// them).
double sendrecv_s(int64_t bytes, int partner, Communicator& world, Communicator& timing,
                  double budget);

/// Seconds per step of a ring: `bytes` sent to `next` while as many arrive from `prev`,
/// both waited on, as each round of trident's reduce-scatter goes; averaged over, and the
/// trials agreed between, the ranks of `timing`.
double ring_step_s(int64_t bytes, int next, int prev, Communicator& world, Communicator& timing,
                   double budget);

/// Seconds per message of `bytes` one way, from the sender to `partner` (`sending`), or to
/// this rank from `partner`, which then answers with one byte so that the sender sees the
/// message delivered; averaged over, and the trials agreed between, the ranks of `timing`.
double send_s(int64_t bytes, int partner, bool sending, Communicator& world, Communicator& timing,
              double budget);

}  // namespace trident::calibrate
