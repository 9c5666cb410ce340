// The parts of a step beyond one micro-batch, and step_time, their sum.
#include "plan/step_parts.h"

#include <algorithm>  // std::max, std::min
#include <cmath>      // std::cbrt

#include "config/choices.h"   // PipelineSchedule
#include "plan/muon_cost.h"   // muon_stage, newton_schulz_flops
#include "plan/tier_model.h"  // tier_traffic, tier_wait_s

namespace trident::plan {

StageWork stage_work(const PlanModel& m, const MicroBatchTime& t) {
  // Waiting on the tp collectives, the ep all-to-alls and the ring takes no core.
  const bool split = m.schedule == "zb-h1";
  const double rest = t.compute - t.forward;
  return {t.forward, split ? t.backward : rest, t.tp_forward + t.ep + t.cp, t.tp - t.tp_forward,
          split ? rest - t.backward : 0.0};
}

StagePace stage_pace(const PlanModel& m, const Layout& l, const Cluster& c) {
  StagePace p;
  p.slow = micro_batch_time(m, l, c, 0);
  p.psi = stage_parameters(m, l.pp, l.tp, 0, l.ep);
  p.experts = stage_expert_parameters(m, l.pp, l.tp, l.ep, 0);
  p.mean_compute = p.slow.compute / l.pp;
  p.work.push_back(stage_work(m, p.slow));
  for (int s = 1; s < l.pp; ++s) {
    const MicroBatchTime t = micro_batch_time(m, l, c, s);
    p.work.push_back(stage_work(m, t));
    const MicroBatchTime& slow = p.slow;
    if (t.compute + t.tp + t.ep + t.cp > slow.compute + slow.tp + slow.ep + slow.cp) p.slow = t;
    const int64_t here = stage_parameters(m, l.pp, l.tp, s, l.ep);
    if (here > p.psi) {
      p.psi = here;
      p.experts = stage_expert_parameters(m, l.pp, l.tp, l.ep, s);
    }
    p.mean_compute += t.compute / l.pp;
  }
  return p;
}

namespace {

bool interleaved(const PlanModel& m) {
  return m.schedule == "interleaved-1f1b" && m.virtual_stages > 1;
}

}  // namespace

double pipeline_sends_s(const PlanModel& m, const Layout& l, const Cluster& c, double mbs) {
  double pp = 0, per_micro_batch = 0;
  if (l.pp > 1) {
    const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
    const Link link = link_for(c, l, Dim::kPp);
    const double bytes =
        static_cast<double>(rank_tokens(m, l).seq_len * l.micro_batch * m.hidden) * b.activation;
    per_micro_batch = 2.0 * send_s(bytes, link);  // the activation forward, its gradient back
    pp = mbs * per_micro_batch;
    const double embedding = static_cast<double>(padded_vocab(m, l.tp) / l.tp * m.hidden);
    pp += all_reduce_s(embedding * b.transport, 2, link);
  }
  if (interleaved(m)) pp += (m.virtual_stages - 1.0) * mbs * per_micro_batch;
  return pp;
}

double pipeline_s(const PlanModel& m, const Layout& l, const Cluster& c,
                  const std::vector<StageWork>& work) {
  // With a core per rank each stage idles while it waits on the others' passes; with more
  // ranks than cores, other stages run in a stage's fill and drain as far as their
  // dependencies allow. ZB-H1's deferred weight halves fill the cool-down; interleaved
  // 1F1B runs each rank's chunks (the first holding the embedding, the last the head).
  SharedPipeline sim;
  sim.micro_batches = l.micro_batches(m);
  sim.schedule = m.schedule == "gpipe"   ? PipelineSchedule::kGpipe
                 : m.schedule == "zb-h1" ? PipelineSchedule::kZbH1
                 : interleaved(m)        ? PipelineSchedule::kInterleaved1F1B
                                         : PipelineSchedule::kOneFOneB;
  std::vector<StageWork> stages = work;
  if (interleaved(m)) {
    sim.chunks = static_cast<int>(m.virtual_stages);
    stages.clear();
    for (int v = 0; v < l.pp * m.virtual_stages; ++v)
      stages.push_back(stage_work(m, micro_batch_time(m, l, c, v, sim.chunks)));
  }
  sim.copies = l.replicas() * l.tp;
  sim.cores = static_cast<double>(l.world()) / core_share(l, c);
  // Every send is charged in pipeline_sends_s: with them here, a long pipeline's sends
  // would hide behind the steady state in the simulation but not there.
  sim.send_s = 0;
  return shared_pipeline_s(stages, sim);
}

double bubble_s(const PlanModel& m, const Layout& l, const Cluster& c, const StagePace& pace,
                const TimeBreakdown& t) {
  if (l.pp <= 1) return 0;
  return std::max(0.0, pipeline_s(m, l, c, pace.work) - t.tp - t.ep - t.cp - t.compute);
}

double exposed(double seconds, double last_bucket, double window, double overlap) {
  const double hideable = std::min(std::max(0.0, seconds - last_bucket), window);
  return seconds - overlap * hideable;
}

double reductions_s(const PlanModel& m, const Layout& l, const Cluster& c,
                    const ReducedBuffer& buffer, double backward, double mbs) {
  const double n = buffer.elements;
  const int ranks = buffer.ranks;
  const Link& link = buffer.link;
  if (ranks <= 1 || n <= 0) return 0.0;
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  const double grads = n * b.transport;
  const double bucket = std::min(static_cast<double>(m.bucket_size), n) * b.transport;
  const double params = n * b.param;
  if (l.zero == 0)
    return exposed(all_reduce_s(grads, ranks, link), all_reduce_s(bucket, ranks, link), backward,
                   c.all_reduce_overlap_or_dp());
  if (l.zero == 1)
    return exposed(reduce_scatter_s(grads, ranks, link), reduce_scatter_s(bucket, ranks, link),
                   backward, c.dp_overlap) +
           all_gather_s(params, ranks, link);
  // Stages 2 and 3 reduce-scatter every micro-batch's gradients during its backward.
  double t = mbs * exposed(reduce_scatter_s(grads, ranks, link),
                           reduce_scatter_s(bucket, ranks, link), backward, c.dp_overlap);
  if (l.zero == 2) t += all_gather_s(params, ranks, link);
  if (l.zero == 3) {
    // Parameters gathered before each micro-batch's forward, its recomputation and its
    // backward (once a step when layers stay gathered), prefetched behind the previous
    // layer's compute as far as dp_overlap allows.
    const double gather = all_gather_s(params, ranks, link);
    const double gathers =
        m.zero3_reshard_after_forward ? mbs * (l.checkpointing ? 3.0 : 2.0) : 1.0;
    t += gathers * exposed(gather, all_gather_s(bucket, ranks, link), backward / 2.0, c.dp_overlap);
  }
  return t;
}

double dp_reductions_s(const PlanModel& m, const Layout& l, const Cluster& c, const StagePace& pace,
                       double mbs) {
  double dp = 0;
  if (l.replicas() > 1) {
    const ReducedBuffer dense{static_cast<double>(pace.psi - pace.experts), l.replicas(),
                              link_for(c, l, Dim::kDp)};
    dp = reductions_s(m, l, c, dense, pace.slow.backward, mbs);
  }
  if (pace.experts > 0 && l.expert_dp() > 1) {
    const ReducedBuffer experts{static_cast<double>(pace.experts), l.expert_dp(),
                                link_for(c, l, Dim::kExpertDp)};
    dp += reductions_s(m, l, c, experts, pace.slow.backward, mbs);
  }
  return dp;
}

ScalarCollectives scalar_collectives(const Layout& l, const Cluster& c) {
  ScalarCollectives s;
  if (l.world() <= 1) return s;
  Link world = link_for(c, l, Dim::kDp);
  if (!world.inter_node) world = link_for(c, l, Dim::kPp);
  s.dp = all_reduce_s(8.0, l.world(), world) +
         all_reduce_s(8.0, l.replicas(), link_for(c, l, Dim::kDp));
  s.pp = all_gather_s(8.0, l.pp, link_for(c, l, Dim::kPp));
  return s;
}

double shard_elements(const Layout& l, const StagePace& pace) {
  return static_cast<double>(pace.psi - pace.experts) / l.replicas() +
         static_cast<double>(pace.experts) / std::max(l.expert_dp(), 1);
}

double zero2_copies_s(const PlanModel& m, const Layout& l, const Cluster& c, const StagePace& pace,
                      double mbs) {
  if (c.memory_gbps <= 0 || l.zero < 2) return 0;
  // The gradients copied into bucket buffers (read and write) and the reduced shard added
  // into the gradient shard (read, read, write).
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  return std::max(1.0, core_share(l, c)) * mbs *
         (2.0 * static_cast<double>(pace.psi) * b.grad +
          3.0 * shard_elements(l, pace) * b.grad_shard) /
         (c.memory_gbps * 1e9);
}

double optimizer_s(const PlanModel& m, const Layout& l, const Cluster& c, const StagePace& pace) {
  if (c.memory_gbps <= 0) return 0;
  // trident's AdamW (zero/zero_step.cpp) runs as tensor operations over its shard in the
  // state dtype: weight decay 2 passes, the scaled gradient 2, each moment 5, the
  // denominator 6, the update 4, the gradient norm 1. A calibrated update (all but the
  // norm) prices it per element, twice over for fp64's bytes; else its 24 passes at
  // memory_gbps. 16-bit parameters add the master's rounding; the gradients are zeroed.
  const StateBytes b = state_bytes_for(m.precision, m.grad_reduce_dtype);
  const double psi = static_cast<double>(pace.psi);
  const double shard = l.zero == 0 ? psi : shard_elements(l, pace);
  const double state = m.precision == "fp64" ? 8.0 : 4.0;
  double update_s = 0, bytes = shard * state;  // the norm
  if (c.adamw_ns_per_element > 0)
    update_s = shard * c.adamw_ns_per_element * 1e-9 * (state / 4.0);
  else
    bytes += shard * 24.0 * state;
  if (b.param < state) bytes += shard * (state + b.param);
  bytes += (l.zero < 2 ? psi * b.grad : shard * b.grad_shard);
  return std::max(1.0, core_share(l, c)) * c.contention_at(ranks_sharing(l, c)) *
         (update_s + bytes / (c.memory_gbps * 1e9));
}

double muon_s(const PlanModel& m, const Layout& l, const Cluster& c) {
  if (!m.muon) return 0;
  // The slowest stage's: its matrices' Newton-Schulz shared over its ranks as owners, and
  // their exchange, a reduce-scatter and an all-gather over the stage's ranks (dp x cp x tp;
  // the dp link, which is the slower one where the stage spans nodes).
  const int ranks = l.replicas() * l.tp;
  const std::string precision = m.precision == "fp64" ? "fp64" : "fp32";
  const double state = m.precision == "fp64" ? 8.0 : 4.0;
  Link link = link_for(c, l, Dim::kDp);
  if (l.replicas() <= 1) link = link_for(c, l, Dim::kTp);
  double slowest = 0;
  for (int s = 0; s < l.pp; ++s) {
    const MuonStage stage = muon_stage(m, l.pp, l.tp, l.ep, s);
    double flops = 0, size = 0;
    for (const MuonMatrix& x : stage.matrices) {
      flops += newton_schulz_flops(x, m.muon_ns_steps);
      size = std::max(size, std::cbrt(static_cast<double>(x.rows * x.cols) *
                                      static_cast<double>(std::min(x.rows, x.cols))));
    }
    const double rate = c.matmul_flops(precision, size);
    double t = rate > 0 ? flops / ranks / rate : 0.0;
    if (ranks > 1)
      t += reduce_scatter_s(stage.whole * state, ranks, link) +
           all_gather_s(stage.whole * state, ranks, link);
    slowest = std::max(slowest, t);
  }
  return slowest * std::max(1.0, core_share(l, c));
}

double tier_s(const PlanModel& m, const Layout& l, const Cluster& c, const TimeBreakdown& t) {
  if (c.disk_read() <= 0 || m.offload_optimizer != "nvme") return 0;
  // The tier streams its files through the AdamW step, and stage 3's gathers and the
  // reduced gradients move during forward and backward (docs/offload.md).
  TierWindows windows;
  windows.optimizer_s = t.optimizer;
  windows.compute_s = t.compute;
  windows.gradient_s = l.replicas() > 1 ? c.dp_overlap * t.compute : t.compute;
  const DiskRates disk{c.disk_read(), c.disk_write(), c.disk_overlap, c.tier_stream_s_per_gb};
  double tier = 0;
  for (int s = 0; s < l.pp; ++s)
    tier = std::max(tier, tier_wait_s(tier_traffic(m, l, s), disk, windows));
  return tier;
}

TimeBreakdown step_time(const PlanModel& m, const Layout& l, const Cluster& c) {
  const double mbs = static_cast<double>(l.micro_batches(m));
  const StagePace pace = stage_pace(m, l, c);
  TimeBreakdown out;
  out.compute = mbs * pace.slow.compute;
  out.tp = mbs * pace.slow.tp;
  out.ep = mbs * pace.slow.ep;
  out.all_to_all_bytes = mbs * pace.slow.ep_bytes;
  out.cp = mbs * pace.slow.cp;
  out.ring_bytes = mbs * pace.slow.cp_bytes;
  out.flops = mbs * pace.slow.flops;
  out.pp = pipeline_sends_s(m, l, c, mbs);
  // More ranks than cores time-share them: a step's compute is at least the node's work
  // over its cores.
  const double share = core_share(l, c);
  if (share > 1) out.compute = std::max(out.compute, share * mbs * pace.mean_compute);
  out.bubble = bubble_s(m, l, c, pace, out);
  out.dp = dp_reductions_s(m, l, c, pace, mbs);
  const ScalarCollectives scalars = scalar_collectives(l, c);
  out.dp += scalars.dp;
  out.pp += scalars.pp;
  out.dp += zero2_copies_s(m, l, c, pace, mbs);
  out.optimizer = optimizer_s(m, l, c, pace) + muon_s(m, l, c);
  out.tier = tier_s(m, l, c, out);
  return out;
}

}  // namespace trident::plan
