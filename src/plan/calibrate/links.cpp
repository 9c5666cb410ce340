// Point-to-point and all-reduce timings between ranks, through the Communicator.
#include "plan/calibrate/links.h"

#include <ATen/ATen.h>  // at::ones, at::empty

#include <algorithm>  // std::max

#include "parallel/communicator.h"   // Communicator, WorkHandle
#include "plan/calibrate/compute.h"  // some_work
#include "plan/calibrate/timing.h"   // time_per_call, mean_over_ranks

namespace trident::calibrate {

double sendrecv_s(int64_t bytes, Communicator& world) {
  const int partner = (world.rank() ^ 1) < world.size() ? (world.rank() ^ 1) : world.rank();
  return sendrecv_s(bytes, partner, world, world);
}

double sendrecv_s(int64_t bytes, int partner, Communicator& world, Communicator& timing) {
  at::Tensor out = at::ones({bytes}, at::kByte), in = at::empty({bytes}, at::kByte);
  constexpr int kTag = 7;
  const double s = time_per_call(
      [&] {
        // The receive first, so that a message to itself or a rendezvous finds it posted.
        WorkHandle recv = world.recv(in, partner, kTag);
        WorkHandle send = world.send(out, partner, kTag);
        send->wait();
        recv->wait();
      },
      bytes >= (16 << 20) ? 1.0 : 0.3, timing);
  return mean_over_ranks(s, timing);
}

double paced_sendrecv_s(int64_t bytes, int partner, double work, Communicator& world,
                        Communicator& timing) {
  at::Tensor out = at::ones({bytes}, at::kByte), in = at::empty({bytes}, at::kByte);
  constexpr int kTag = 8;
  const double s = time_per_call(
      [&] {
        some_work();
        WorkHandle recv = world.recv(in, partner, kTag);
        WorkHandle send = world.send(out, partner, kTag);
        send->wait();
        recv->wait();
      },
      bytes >= (1 << 20) ? 2.0 : 0.5, timing);
  return std::max(0.0, mean_over_ranks(s, timing) - work);
}

double communicator_all_reduce_s(Communicator& group, int64_t bytes, double work,
                                 Communicator& world) {
  at::Tensor buffer = at::ones({bytes / 4});
  const double both = mean_over_ranks(time_per_call(
                                          [&] {
                                            some_work();
                                            group.all_reduce(buffer, ReduceOp::kSum)->wait();
                                          },
                                          bytes >= (8 << 20) ? 2.0 : 1.0, world),
                                      world);
  return std::max(0.0, both - work);
}

}  // namespace trident::calibrate
