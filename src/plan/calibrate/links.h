// Link measurements for the planner through trident's communicator, the path training's
// messages take: exchanges between pairs of ranks, back to back or between computation.
#pragma once
#include <cstdint>  // int64_t

namespace trident {
class Communicator;
}  // namespace trident

namespace trident::calibrate {

/// Seconds per exchange of `bytes` each way with `partner` (a rank of `world`; itself when
/// it has none) — a send and a receive posted together, both waited on — averaged over,
/// and the trials agreed between, the ranks of `timing` (those measuring; collective over
/// them).
double sendrecv_s(int64_t bytes, int partner, Communicator& world, Communicator& timing);

/// The same exchange when it comes after some_work(), as training's messages come between
/// computation, less `work` (some_work()'s own time): on a link shaped by a token bucket
/// (tc's tbf) or with other bursts of slack, small messages then pass faster than the
/// sustained rate. Never below 0.
double paced_sendrecv_s(int64_t bytes, int partner, double work, Communicator& world,
                        Communicator& timing);

}  // namespace trident::calibrate
