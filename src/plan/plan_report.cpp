// Text and JSON renderings of plans and single layouts.
#include "plan/plan_report.h"

#include <algorithm>  // std::min, std::max
#include <cstdio>     // std::snprintf
#include <sstream>    // std::ostringstream
#include <utility>    // std::pair

namespace trident::plan {

namespace {

/// After a peak RSS predicted for a rank whose heap keeps freed memory.
constexpr const char* kKeptHeapNote =
    "\n    with train.allocator = \"cache\" freed memory is kept for reuse: blocks of 1 MiB or "
    "more up to twice the most in use (docs/planner.md)";

/// A unit that keeps `largest` readable: its name and its size in base units.
std::pair<const char*, double> bytes_unit(double largest) {
  if (largest >= 1e9) return {"GB", 1e9};
  if (largest >= 1e6) return {"MB", 1e6};
  return {"kB", 1e3};
}

std::pair<const char*, double> seconds_unit(double largest) {
  if (largest >= 1) return {"s", 1};
  if (largest >= 1e-3) return {"ms", 1e-3};
  return {"us", 1e-6};
}

std::string format(const char* fmt, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, fmt, v);
  return buf;
}

std::string si(double v) {
  if (v >= 1e9) return format("%.3gG", v / 1e9);
  if (v >= 1e6) return format("%.3gM", v / 1e6);
  if (v >= 1e3) return format("%.3gk", v / 1e3);
  return format("%.3g", v);
}

const char* link_name(bool inter) { return inter ? "inter-node" : "intra-node"; }

}  // namespace

std::string describe_job(const PlanModel& m, const Cluster& c, int devices) {
  std::ostringstream out;
  const int nodes = (devices + c.devices_per_node - 1) / c.devices_per_node;
  out << "model: " << m.layers << " layers, hidden " << m.hidden << ", " << m.heads
      << " heads, vocab " << m.vocab << ", seq " << m.seq_len << "; "
      << si(static_cast<double>(total_parameters(m))) << " parameters; " << m.precision
      << ", schedule " << m.schedule << "\n";
  if (m.moe_experts > 0)
    out << "experts: " << m.moe_layers_in(0, m.layers) << " MoE layers of " << m.moe_experts
        << " experts (width " << m.expert_ffn() << "), top " << m.moe_top_k
        << (m.moe_shared_expert ? " and a shared expert" : "") << "; "
        << si(static_cast<double>(active_parameters(m))) << " parameters active per token\n";
  out << "batch: " << m.global_batch << " sequences (" << m.global_batch * m.seq_len
      << " tokens) per step\n";
  out << "cluster: " << c.name;
  if (!c.description.empty()) out << " (" << c.description << ")";
  out << "; " << devices << " devices = " << nodes << " node" << (nodes > 1 ? "s" : "")
      << " of up to " << c.devices_per_node << "; " << format("%.3g", c.usable_memory_bytes() / 1e9)
      << " GB usable per device; links " << format("%.3g", c.intra_node_gbps) << " GB/s in a node, "
      << format("%.3g", c.inter_node_gbps) << " GB/s across\n";
  return out.str();
}

std::string plan_text(const PlanModel& m, const Cluster& c, int devices, const Plan& plan,
                      int top) {
  std::ostringstream out;
  out << describe_job(m, c, devices) << "\n";
  const int shown = std::min<int>(top, static_cast<int>(plan.ranked.size()));
  out << plan.considered << " layouts considered, " << plan.too_big << " over memory";
  if (shown > 0) out << "; the fastest " << shown << ":";
  out << "\n\n";
  if (shown > 0) {
    double mem_max = 0, time_max = 0;
    for (int i = 0; i < shown; ++i) {
      mem_max = std::max(mem_max, plan.ranked[i].memory.total());
      time_max = std::max(time_max, plan.ranked[i].time.total());
    }
    const auto [mu, ms] = bytes_unit(mem_max);
    const auto [tu, ts] = seconds_unit(time_max);
    // An MoE model's layouts differ in ep too, and spend time in its all-to-alls; layouts
    // that split the sequence, in cp and the ring's transfers.
    const bool moe = m.moe_experts > 0;
    bool ring = false;
    for (int i = 0; i < shown; ++i) ring = ring || plan.ranked[i].layout.cp > 1;
    char line[512];
    std::snprintf(line, sizeof line,
                  "%3s %3s %s%s%3s %3s %4s %4s %4s %5s | memory per device, %s: %7s %7s %7s %7s "
                  "%7s %7s | step time, %s: %8s %8s %s%s%8s %8s %8s %8s %8s | %7s\n",
                  "#", "dp", ring ? " cp " : "", moe ? " ep " : "", "pp", "tp", "zero", "mb",
                  "ckpt", "m", mu, "params", "grads", "optim", "activ", "comm", "total", tu,
                  "compute", "tp", ring ? "      cp " : "", moe ? "      ep " : "", "pp", "dp",
                  "bubble", "optim", "total", "tok/s");
    out << line;
    for (int i = 0; i < shown; ++i) {
      const Evaluation& e = plan.ranked[i];
      const Layout& l = e.layout;
      const MemoryBreakdown& b = e.memory;
      const TimeBreakdown& t = e.time;
      char ep_column[16] = "", ep_time[24] = "", cp_column[16] = "", cp_time[24] = "";
      if (moe) {
        std::snprintf(ep_column, sizeof ep_column, "%3d ", l.ep);
        std::snprintf(ep_time, sizeof ep_time, "%8.4g ", t.ep / ts);
      }
      if (ring) {
        std::snprintf(cp_column, sizeof cp_column, "%3d ", l.cp);
        std::snprintf(cp_time, sizeof cp_time, "%8.4g ", t.cp / ts);
      }
      std::snprintf(line, sizeof line,
                    "%3d %3d %s%s%3d %3d %4d %4lld %4s %5lld | %22s%7.3g %7.3g %7.3g %7.3g %7.3g "
                    "%7.3g | %16s%8.4g %8.4g %s%s%8.4g %8.4g %8.4g %8.4g %8.4g | %7s\n",
                    i + 1, l.dp, cp_column, ep_column, l.pp, l.tp, l.zero,
                    static_cast<long long>(l.micro_batch), l.checkpointing ? "full" : "none",
                    static_cast<long long>(l.micro_batches(m)), "", b.parameters / ms,
                    b.gradients / ms, b.optimizer_states / ms, (b.activations + b.scores) / ms,
                    b.communication / ms, b.total() / ms, "", t.compute / ts, t.tp / ts, cp_time,
                    ep_time, t.pp / ts, t.dp / ts, t.bubble / ts, t.optimizer / ts, t.total() / ts,
                    si(e.tokens_per_s).c_str());
      out << line;
    }
    out << "\n(m: micro-batches per step per dp rank; activ: what the layers keep and attention's "
           "scores in flight; memory: the pipeline stage that holds the most)\n";
  }
  out << "\nbest: " << (shown > 0 ? plan.ranked[0].layout.name() : std::string("none")) << " — "
      << plan.why << "\n";
  return out.str();
}

std::string evaluation_text(const PlanModel& m, const Cluster& c, const Evaluation& e) {
  std::ostringstream out;
  const Layout& l = e.layout;
  const MemoryBreakdown& b = e.memory;
  const TimeBreakdown& t = e.time;
  out << describe_job(m, c, l.world()) << "\n";
  out << "layout: " << l.name() << " (" << l.micro_batches(m)
      << " micro-batches per step per dp rank)\n";
  out << "links: tp " << link_name(e.tp_inter_node) << ", dp " << link_name(e.dp_inter_node)
      << ", pp " << link_name(e.pp_inter_node) << "\n\n";
  out << "memory per device (pipeline stage " << b.stage << ", " << b.params_held
      << " parameters):\n";
  const std::pair<const char*, double> parts[] = {{"parameters", b.parameters},
                                                  {"gradients", b.gradients},
                                                  {"optimizer states", b.optimizer_states},
                                                  {"activations", b.activations},
                                                  {"attention scores", b.scores},
                                                  {"communication buffers", b.communication},
                                                  {"total", b.total()}};
  for (const auto& [name, v] : parts) {
    if (std::string(name) == "total" && b.transient > 0)
      out << "  transient (ZeRO 2, 3) " << format("%16.0f bytes", b.transient)
          << format("  %10.4g GB\n", b.transient / 1e9);
    out << "  " << name << std::string(22 - std::string(name).size(), ' ')
        << format("%16.0f bytes", v) << format("  %10.4g GB\n", v / 1e9);
  }
  if (b.offloaded > 0)
    out << "  offloaded (" << m.offload_optimizer << " tier, not on the device)"
        << format("  %.4g GB\n", b.offloaded / 1e9);
  if (c.process_base_gb > 0)
    out << "  peak RSS of a rank on a CPU device: "
        << format("%.4g GB", (b.total() + c.process_base_gb * 1e9) / 1e9) << " (the total and "
        << format("%.3g GB", c.process_base_gb) << " the process holds beyond it, calibrated)"
        << (m.releases_host_memory ? "" : kKeptHeapNote) << "\n";
  out << "  " << (e.fits ? "fits in " : "does NOT fit in ")
      << format("%.4g", c.usable_memory_bytes() / 1e9) << " GB\n\nstep time:\n";
  const std::pair<const char*, double> times[] = {
      {"compute", t.compute},  {"tp communication", t.tp}, {"cp ring", t.cp},
      {"ep all-to-all", t.ep}, {"pp communication", t.pp}, {"dp communication", t.dp},
      {"bubble", t.bubble},    {"optimizer", t.optimizer}, {"offload tier", t.tier},
      {"total", t.total()}};
  for (const auto& [name, v] : times) {
    const bool all_to_all = std::string(name) == "ep all-to-all";
    const bool ring = std::string(name) == "cp ring";
    if (all_to_all && m.moe_experts == 0) continue;  // a dense model has none
    if (ring && l.cp == 1) continue;                 // whole sequences need no ring
    out << "  " << name << std::string(22 - std::string(name).size(), ' ') << format("%12.6g s", v);
    if (all_to_all && t.all_to_all_bytes > 0)
      out << format(" (%.4g MB sent a step)", t.all_to_all_bytes / 1e6);
    if (ring) out << format(" exposed (%.4g MB sent a step)", t.ring_bytes / 1e6);
    out << "\n";
  }
  out << "  " << si(e.tokens_per_s) << " tokens/s, " << format("%.4g", t.flops / t.total() / 1e12)
      << " TFLOP/s per device, bubble " << format("%.1f%%", 100 * t.bubble_fraction()) << "\n";
  return out.str();
}

nlohmann::json evaluation_json(const PlanModel& m, const Evaluation& e) {
  const Layout& l = e.layout;
  const MemoryBreakdown& b = e.memory;
  const TimeBreakdown& t = e.time;
  return {{"dp", l.dp},
          {"pp", l.pp},
          {"tp", l.tp},
          {"ep", l.ep},
          {"cp", l.cp},
          {"zero", l.zero},
          {"micro_batch", l.micro_batch},
          {"micro_batches", l.micro_batches(m)},
          {"checkpointing", l.checkpointing ? "full" : "none"},
          {"name", l.name()},
          {"fits", e.fits},
          {"memory_bytes",
           {{"parameters", b.parameters},
            {"gradients", b.gradients},
            {"optimizer_states", b.optimizer_states},
            {"activations", b.activations},
            {"communication", b.communication},
            {"bucket_buffers", b.bucket_buffers},
            {"gather_buffers", b.gather_buffers},
            {"offloaded", b.offloaded},
            {"transient", b.transient},
            {"attention_scores", b.scores},
            {"total", b.total()},
            {"stage", b.stage},
            {"parameters_held", b.params_held}}},
          {"time_s",
           {{"compute", t.compute},
            {"tp", t.tp},
            {"ep", t.ep},
            {"cp", t.cp},
            {"pp", t.pp},
            {"dp", t.dp},
            {"bubble", t.bubble},
            {"optimizer", t.optimizer},
            {"tier", t.tier},
            {"total", t.total()}}},
          {"bubble_fraction", t.bubble_fraction()},
          {"flops_per_device", t.flops},
          {"all_to_all_bytes", t.all_to_all_bytes},
          {"tokens_per_s", e.tokens_per_s},
          {"links",
           {{"tp", link_name(e.tp_inter_node)},
            {"dp", link_name(e.dp_inter_node)},
            {"pp", link_name(e.pp_inter_node)}}}};
}

nlohmann::json plan_json(const PlanModel& m, const Cluster& c, int devices, const Plan& plan,
                         int top) {
  nlohmann::json layouts = nlohmann::json::array();
  const int shown = std::min<int>(top, static_cast<int>(plan.ranked.size()));
  for (int i = 0; i < shown; ++i) layouts.push_back(evaluation_json(m, plan.ranked[i]));
  nlohmann::json out = {{"model",
                         {{"layers", m.layers},
                          {"hidden", m.hidden},
                          {"heads", m.heads},
                          {"vocab", m.vocab},
                          {"seq_len", m.seq_len},
                          {"global_batch", m.global_batch},
                          {"precision", m.precision},
                          {"schedule", m.schedule},
                          {"parameters", total_parameters(m)},
                          {"moe_experts", m.moe_experts},
                          {"active_parameters", active_parameters(m)},
                          {"releases_host_memory", m.releases_host_memory}}},
                        {"cluster",
                         {{"name", c.name},
                          {"devices_per_node", c.devices_per_node},
                          {"usable_memory_bytes", c.usable_memory_bytes()},
                          {"process_base_bytes", c.process_base_gb * 1e9}}},
                        {"devices", devices},
                        {"considered", plan.considered},
                        {"too_big", plan.too_big},
                        {"layouts", layouts},
                        {"why", plan.why}};
  if (plan.ranked.empty() && plan.considered > 0)
    out["smallest"] = evaluation_json(m, plan.smallest);
  return out;
}

std::string capacity_text(const PlanModel& m, const Layout& l, const Cluster& c, double memory,
                          double disk, int ranks, const std::vector<CapacityRow>& rows) {
  std::ostringstream out;
  out << "largest model of width " << m.hidden << " (" << m.heads << " heads, sequence "
      << m.seq_len << ", vocabulary " << m.vocab << ", " << m.precision << ") on dp " << l.dp
      << " x pp " << l.pp << " x tp " << l.tp << ", micro-batch " << l.micro_batch
      << ", full recomputation, " << ranks << " rank(s) sharing " << format("%.3g GB", memory / 1e9)
      << " of memory and " << (disk >= 0 ? format("%.3g GB", disk / 1e9) : std::string("unbounded"))
      << " of disk\n";
  if (c.process_base_gb > 0)
    out << "(each process holds " << format("%.3g GB", c.process_base_gb)
        << " beyond its model: the cluster's calibrated process_base_gb)\n";
  else
    out << "(the cluster file has no process_base_gb: run trident calibrate for it; the peak "
           "RSS below leaves it out)\n";
  out << "(peak RSS of a rank whose freed memory goes back to the system: train.allocator = "
         "\"release\", which \"auto\" chooses when the parameters are in the tier)\n";
  for (const CapacityRow& r : rows) {
    out << "  " << r.placement.name << " (ZeRO " << r.placement.zero << "): ";
    if (r.layers == 0) {
      out << "not even " << l.pp << " layer(s) fit: the " << r.limit << " is too small\n";
      continue;
    }
    out << r.layers << " layers, " << format("%.4g", static_cast<double>(r.parameters) / 1e9)
        << "B parameters; peak RSS " << format("%.3g GB", r.peak_rss / 1e9) << ", tier "
        << format("%.3g GB", r.tier_bytes / 1e9) << " per rank, step " << format("%.3g s", r.step_s)
        << (r.limit.empty() ? std::string(" (the end of the search)")
                            : "; one more layer exceeds the " + r.limit)
        << "\n";
  }
  return out.str();
}

nlohmann::json capacity_json(const Cluster& c, double memory, double disk, int ranks,
                             const std::vector<CapacityRow>& rows) {
  nlohmann::json placements = nlohmann::json::array();
  for (const CapacityRow& r : rows)
    placements.push_back({{"placement", r.placement.name},
                          {"zero", r.placement.zero},
                          {"layers", r.layers},
                          {"parameters", r.parameters},
                          {"peak_rss_bytes", r.peak_rss},
                          {"tier_bytes", r.tier_bytes},
                          {"step_s", r.step_s},
                          {"limit", r.limit}});
  return {{"memory_bytes", memory},
          {"disk_bytes", disk >= 0 ? nlohmann::json(disk) : nlohmann::json()},
          {"ranks_per_machine", ranks},
          {"process_base_bytes", c.process_base_gb * 1e9},
          {"placements", placements}};
}

}  // namespace trident::plan
