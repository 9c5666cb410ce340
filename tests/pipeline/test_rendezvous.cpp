// The rendezvous check (sends that wait for their receives, messages matched by order, as
// on NCCL): every schedule passes it at every size with a one-way channel per neighbour and
// kind, as a CUDA run communicates; with one channel only GPipe does, and with a channel
// per kind all but interleaved 1F1B (why a CUDA run has one per link); hand-made lists
// that cross their messages are caught with the stage named.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "pipeline/rendezvous_checker.h"
#include "pipeline/schedule.h"

namespace trident::pipeline {
namespace {

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// How many of the sizes pp 2..5, m 1..12 (interleaved: v 2..3, m a multiple of pp) fail.
int failing(const std::string& name, Channels channels, int* all) {
  int bad = 0;
  *all = 0;
  const bool interleaved = name == "interleaved-1f1b";
  for (int pp = 2; pp <= 5; ++pp)
    for (int m = 1; m <= 12; ++m)
      for (int v = interleaved ? 2 : 1; v <= (interleaved ? 3 : 1); ++v) {
        if (interleaved && m % pp != 0) continue;
        ++*all;
        if (!check_rendezvous(make_schedules(name, pp, m, v), channels).empty()) ++bad;
      }
  return bad;
}

TEST(Rendezvous, a_channel_per_link_carries_every_schedule_at_every_size) {
  int all = 0;
  for (const char* name : {"gpipe", "1f1b", "zb-h1"}) {
    EXPECT_EQ(failing(name, Channels::kPerLink, &all), 0) << name;
    EXPECT_EQ(all, 48);
    EXPECT_EQ(failing(name, Channels::kPerKind, &all), 0) << name;
  }
  EXPECT_EQ(failing("interleaved-1f1b", Channels::kPerLink, &all), 0);
  EXPECT_EQ(all, 30);
}

TEST(Rendezvous, one_channel_deadlocks_1f1b_and_zb_h1_and_one_per_kind_interleaved) {
  int all = 0;
  EXPECT_EQ(failing("gpipe", Channels::kOne, &all), 0);  // all sends, then all receives
  EXPECT_EQ(failing("1f1b", Channels::kOne, &all), 44);  // all but m = 1
  EXPECT_EQ(failing("zb-h1", Channels::kOne, &all), 44);
  EXPECT_EQ(failing("interleaved-1f1b", Channels::kOne, &all), all);
  EXPECT_EQ(failing("interleaved-1f1b", Channels::kPerKind, &all), all);
  EXPECT_EQ(all, 30);
  // pp 2, m 4: each stage sends the other an activation, each waiting for a receive that
  // stands behind the other's send on the activation channel.
  const std::string error =
      check_rendezvous(make_schedules("interleaved-1f1b", 2, 4, 2), Channels::kPerKind);
  EXPECT_TRUE(contains(error, "deadlock")) << error;
  EXPECT_TRUE(contains(error, "stage 0, instruction 3 (SA1) waits for stage 1")) << error;
  EXPECT_TRUE(contains(error, "stage 1, instruction 2 (SA0) waits for stage 0")) << error;
}

TEST(Rendezvous, a_send_before_the_receive_it_waits_on_deadlocks_one_channel_only) {
  const std::vector<Schedule> crossed{parse_schedule("SA0 RG0"), parse_schedule("SG0 RA0")};
  EXPECT_TRUE(contains(check_rendezvous(crossed, Channels::kOne), "deadlock"));
  EXPECT_EQ(check_rendezvous(crossed, Channels::kPerKind), "");
}

TEST(Rendezvous, messages_received_out_of_order_are_caught) {
  const std::vector<Schedule> swapped{parse_schedule("SA0 SA1"), parse_schedule("RA1 RA0")};
  const std::string error = check_rendezvous(swapped, Channels::kPerKind);
  EXPECT_TRUE(contains(error,
                       "stage 1, instruction 0 (RA1) expects the activation of "
                       "micro-batch 1"))
      << error;
  EXPECT_TRUE(contains(error, "matched by order")) << error;
  const std::vector<Schedule> missing{parse_schedule("SA0 SA1"), parse_schedule("RA0")};
  EXPECT_TRUE(contains(check_rendezvous(missing, Channels::kPerKind), "never takes")) << error;
}

}  // namespace
}  // namespace trident::pipeline
