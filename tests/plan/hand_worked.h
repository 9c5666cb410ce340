// The small model and flat cluster the step-time parts' tests work their numbers by hand on.
#pragma once
#include "plan/cluster.h"     // Cluster
#include "plan/plan_model.h"  // PlanModel

namespace trident::plan::testing {

/// A GPT-2 of 2 layers, h 64, 4 heads, vocabulary 256, 32 tokens a sequence, 8 a step.
inline PlanModel hand_gpt() {
  PlanModel m;
  m.layers = 2, m.hidden = 64, m.heads = 4, m.vocab = 256, m.seq_len = 32, m.global_batch = 8;
  return m;
}

/// 1 TFLOP/s at every size, links of 1 GB/s without latency, nothing else charged.
inline Cluster flat() {
  Cluster c;
  c.peak_tflops = {{"fp32", 1.0}};
  c.efficiency = 1.0;
  c.intra_node_gbps = c.inter_node_gbps = 1.0;
  c.latency_us = 0;
  return c;
}

}  // namespace trident::plan::testing
