// Point-to-point timings between ranks, through the Communicator.
#include "plan/calibrate/links.h"

#include <ATen/ATen.h>  // at::ones, at::empty

#include "parallel/communicator.h"  // Communicator, WorkHandle
#include "plan/calibrate/timing.h"  // time_per_call, mean_over_ranks

namespace trident::calibrate {

double sendrecv_s(int64_t bytes, int partner, Communicator& world, Communicator& timing,
                  double budget) {
  return ring_step_s(bytes, partner, partner, world, timing, budget);
}

double ring_step_s(int64_t bytes, int next, int prev, Communicator& world, Communicator& timing,
                   double budget) {
  at::Tensor out = at::ones({bytes}, at::kByte), in = at::empty({bytes}, at::kByte);
  const double s = time_per_call(
      [&] {
        // The receive first, so that a message to itself or a rendezvous finds it posted.
        WorkHandle recv = world.recv(in, prev, 8);
        WorkHandle send = world.send(out, next, 8);
        send->wait();
        recv->wait();
      },
      (bytes >= (16 << 20) ? 1.0 : 0.3) * budget, timing);
  return mean_over_ranks(s, timing);
}

double send_s(int64_t bytes, int partner, bool sending, Communicator& world, Communicator& timing,
              double budget) {
  at::Tensor message = at::ones({bytes}, at::kByte), answer = at::zeros({1}, at::kByte);
  const double s = time_per_call(
      [&] {
        if (sending) {
          WorkHandle answered = world.recv(answer, partner, 10);
          world.send(message, partner, 9)->wait();
          answered->wait();
        } else {
          world.recv(message, partner, 9)->wait();
          world.send(answer, partner, 10)->wait();
        }
      },
      (bytes >= (16 << 20) ? 1.0 : 0.3) * budget, timing);
  return mean_over_ranks(s, timing);
}

}  // namespace trident::calibrate
