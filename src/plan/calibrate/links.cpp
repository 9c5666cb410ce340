// Point-to-point timings between ranks, through the Communicator.
#include "plan/calibrate/links.h"

#include <ATen/ATen.h>  // at::ones, at::empty

#include <algorithm>  // std::max

#include "parallel/communicator.h"   // Communicator, WorkHandle
#include "plan/calibrate/compute.h"  // some_work
#include "plan/calibrate/timing.h"   // time_per_call, mean_over_ranks

namespace trident::calibrate {

namespace {

/// Seconds per call of an exchange with `partner` (after some_work() when `paced`), the
/// mean over the ranks of `timing`.
double exchange_s(int64_t bytes, int partner, bool paced, double min_s, Communicator& world,
                  Communicator& timing) {
  at::Tensor out = at::ones({bytes}, at::kByte), in = at::empty({bytes}, at::kByte);
  const int tag = paced ? 8 : 7;
  const double s = time_per_call(
      [&] {
        if (paced) some_work();
        // The receive first, so that a message to itself or a rendezvous finds it posted.
        WorkHandle recv = world.recv(in, partner, tag);
        WorkHandle send = world.send(out, partner, tag);
        send->wait();
        recv->wait();
      },
      min_s, timing);
  return mean_over_ranks(s, timing);
}

}  // namespace

double sendrecv_s(int64_t bytes, int partner, Communicator& world, Communicator& timing) {
  return exchange_s(bytes, partner, false, bytes >= (16 << 20) ? 1.0 : 0.3, world, timing);
}

double paced_sendrecv_s(int64_t bytes, int partner, double work, Communicator& world,
                        Communicator& timing) {
  const double s = exchange_s(bytes, partner, true, bytes >= (1 << 20) ? 2.0 : 0.5, world, timing);
  return std::max(0.0, s - work);
}

}  // namespace trident::calibrate
