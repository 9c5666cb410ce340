// The rendezvous check: whether a pipeline's point-to-point messages also work where a send
// waits for its receive, as on NCCL for messages larger than its buffers. There each
// channel (an NCCL communicator with its stream) runs a rank's sends and receives one after
// another, and matches the messages between two ranks by order alone, whatever their tags.
#pragma once
#include <string>  // std::string
#include <vector>  // std::vector

#include "pipeline/schedule.h"  // Schedule

namespace trident::pipeline {

/// How a stage's messages are spread over channels.
enum class Channels {
  kOne,      // every message of the pipeline group on one channel
  kPerKind,  // activations on one, gradients on another
  kPerLink,  // one per sender, receiver and kind: each carries messages one way
};

/// "" when every channel's messages meet in order and no stage waits forever; otherwise
/// what goes wrong, naming the stage and instruction: a receive matched by order to a
/// message it does not expect, or a deadlock of stages each waiting for another.
std::string check_rendezvous(const std::vector<Schedule>& per_stage, Channels channels);

}  // namespace trident::pipeline
