// Enumeration of layouts, their evaluation and ranking, and the sentence that explains
// why the best one wins.
#include "plan/planner.h"

#include <algorithm>  // std::stable_sort, std::any_of, std::find_if, std::max_element
#include <cstdio>     // std::snprintf
#include <iterator>   // std::begin, std::end
#include <sstream>    // std::ostringstream

namespace trident::plan {

std::string layout_problem(const PlanModel& m, const Layout& l, int devices, int devices_per_node) {
  std::ostringstream why;
  if (l.dp < 1 || l.pp < 1 || l.tp < 1 || l.cp < 1) {
    why << "dp, cp, pp and tp must be at least 1";
  } else if (l.world() != devices) {
    why << (l.cp > 1 ? "dp*cp*pp*tp = " : "dp*pp*tp = ") << l.world() << " is not the " << devices
        << " devices";
  } else if (l.cp > 1 && m.seq_len % (2 * l.cp) != 0) {
    why << "cp " << l.cp << " does not cut the sequence of " << m.seq_len << " into " << 2 * l.cp
        << " equal chunks";
  } else if (l.cp > 1 && l.sequence_parallel && (m.seq_len / l.cp) % l.tp != 0) {
    why << "sequence parallelism cannot split a cp rank's " << m.seq_len / l.cp
        << " tokens over tp " << l.tp;
  } else if (m.heads % l.tp != 0) {
    why << "tp " << l.tp << " does not divide the " << m.heads << " heads";
  } else if (m.llama && m.kv_heads > 0 && m.kv_heads % l.tp != 0 && l.tp % m.kv_heads != 0) {
    why << "tp " << l.tp << " neither divides the " << m.kv_heads
        << " kv heads nor is a multiple of them";
  } else if (l.tp > devices_per_node) {
    why << "tp " << l.tp << " is more than the " << devices_per_node << " devices of a node";
  } else if (m.layers % l.pp != 0) {
    why << "pp " << l.pp << " does not divide the " << m.layers << " layers";
  } else if (l.micro_batch < 1 || m.global_batch % (l.micro_batch * l.dp) != 0) {
    why << "the global batch " << m.global_batch << " is not a multiple of micro_batch "
        << l.micro_batch << " x dp " << l.dp;
  } else if (l.ep < 1 || (l.ep > 1 && m.moe_experts == 0)) {
    why << "ep " << l.ep << " needs MoE layers (model.moe_experts > 0)";
  } else if (l.ep > 1 && (m.moe_experts % l.ep != 0 || l.replicas() % l.ep != 0)) {
    why << "ep " << l.ep << " must divide both the " << m.moe_experts << " experts and dp "
        << l.replicas();
  } else if (l.zero < 0 || l.zero > 3) {
    why << "ZeRO stage " << l.zero << " does not exist";
  }
  return why.str();
}

std::vector<Layout> enumerate_layouts(const PlanModel& m, int devices, int devices_per_node,
                                      const SearchSpace& space) {
  std::vector<Layout> out;
  for (int tp = 1; tp <= devices; ++tp) {
    if (devices % tp != 0) continue;
    for (int pp = 1; pp <= devices / tp; ++pp) {
      if ((devices / tp) % pp != 0) continue;
      // Every cp that cuts the sequence into 2 cp chunks.
      for (int cp = 1; cp <= devices / tp / pp; ++cp) {
        if ((devices / tp / pp) % cp != 0) continue;
        if (cp > 1 && m.seq_len % (2 * cp) != 0) continue;
        const int dp = devices / tp / pp / cp;
        for (int zero : space.zero_stages) {
          if (dp * cp == 1 && zero != 0) continue;
          for (bool ckpt : space.checkpointing) {
            for (int64_t mb = 1; mb * dp <= m.global_batch; ++mb) {
              // Every ep that divides both dp x cp and the experts (1 only for a dense
              // model): the experts' ranks fold into the cp ranks first.
              for (int ep = 1; ep <= dp * cp; ++ep) {
                if ((dp * cp) % ep != 0 || (ep > 1 && m.moe_experts % ep != 0)) continue;
                Layout l{dp, pp, tp, zero, mb, ckpt};
                l.ep = ep;
                l.cp = cp;
                if (layout_problem(m, l, devices, devices_per_node).empty()) out.push_back(l);
              }
            }
          }
        }
      }
    }
  }
  return out;
}

Evaluation evaluate(const PlanModel& m, const Layout& l, const Cluster& c) {
  Evaluation e;
  e.layout = l;
  e.memory = device_memory(m, l);
  e.time = step_time(m, l, c);
  e.fits = e.memory.total() <= c.usable_memory_bytes();
  e.tp_inter_node = group_crosses_nodes(l, Dim::kTp, c.devices_per_node, c.placement == "cyclic");
  e.dp_inter_node = group_crosses_nodes(l, Dim::kDp, c.devices_per_node, c.placement == "cyclic");
  e.pp_inter_node = group_crosses_nodes(l, Dim::kPp, c.devices_per_node, c.placement == "cyclic");
  const double t = e.time.total();
  e.tokens_per_s = t > 0 ? static_cast<double>(m.global_batch * m.seq_len) / t : 0;
  return e;
}

Plan make_plan(const PlanModel& m, const Cluster& c, int devices, const SearchSpace& space) {
  Plan plan;
  bool have_smallest = false;
  for (const Layout& l : enumerate_layouts(m, devices, c.devices_per_node, space)) {
    Evaluation e = evaluate(m, l, c);
    ++plan.considered;
    if (!have_smallest || e.memory.total() < plan.smallest.memory.total()) {
      plan.smallest = e;
      have_smallest = true;
    }
    if (e.fits)
      plan.ranked.push_back(e);
    else
      ++plan.too_big;
  }
  std::stable_sort(plan.ranked.begin(), plan.ranked.end(),
                   [](const Evaluation& a, const Evaluation& b) {
                     const double ta = a.time.total(), tb = b.time.total();
                     if (ta != tb) return ta < tb;
                     return a.memory.total() < b.memory.total();
                   });
  plan.why = explain_best(plan, c);
  return plan;
}

std::string bytes_text(double bytes) {
  char buf[32];
  if (bytes >= 1e9)
    std::snprintf(buf, sizeof buf, "%.1f GB", bytes / 1e9);
  else if (bytes >= 1e6)
    std::snprintf(buf, sizeof buf, "%.1f MB", bytes / 1e6);
  else
    std::snprintf(buf, sizeof buf, "%.1f kB", bytes / 1e3);
  return buf;
}

namespace {

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.0f%%", fraction * 100);
  return buf;
}

}  // namespace

std::pair<std::string, double> largest_part_difference(const TimeBreakdown& a,
                                                       const TimeBreakdown& b) {
  const std::pair<const char*, double> parts[] = {{"compute", b.compute - a.compute},
                                                  {"tp communication", b.tp - a.tp},
                                                  {"the all-to-all over ep", b.ep - a.ep},
                                                  {"pp communication", b.pp - a.pp},
                                                  {"dp communication", b.dp - a.dp},
                                                  {"the bubble", b.bubble - a.bubble},
                                                  {"the optimizer", b.optimizer - a.optimizer},
                                                  {"the nvme tier", b.tier - a.tier}};
  const auto* worst = std::max_element(std::begin(parts), std::end(parts),
                                       [](auto& x, auto& y) { return x.second < y.second; });
  return {worst->first, worst->second};
}

std::string biggest_difference(const TimeBreakdown& a, const TimeBreakdown& b) {
  const auto [part, seconds] = largest_part_difference(a, b);
  char buf[96];
  std::snprintf(buf, sizeof buf, "%s (+%.3g s)", part.c_str(), seconds);
  return buf;
}

std::string explain_best(const Plan& plan, const Cluster& c) {
  std::ostringstream out;
  if (plan.ranked.empty()) {
    if (plan.considered == 0) return "no layout divides the model over these devices";
    out << "nothing fits: the smallest, " << plan.smallest.layout.name() << ", needs "
        << bytes_text(plan.smallest.memory.total()) << " per device of "
        << bytes_text(c.usable_memory_bytes())
        << "; add devices, or a higher ZeRO stage or more memory per device";
    return out.str();
  }
  const Evaluation& e = plan.ranked.front();
  const Layout& l = e.layout;
  const bool any_without_ckpt =
      std::any_of(plan.ranked.begin(), plan.ranked.end(),
                  [](const Evaluation& x) { return !x.layout.checkpointing; });
  if (!l.checkpointing)
    out << "fits without checkpointing";
  else if (any_without_ckpt) {
    const auto best_plain =
        std::find_if(plan.ranked.begin(), plan.ranked.end(),
                     [](const Evaluation& x) { return !x.layout.checkpointing; });
    out << "checkpointing pays for its recompute: the best without it, "
        << best_plain->layout.name() << ", is "
        << percent(best_plain->time.total() / e.time.total() - 1) << " slower";
  } else
    out << "needs checkpointing to fit";
  out << " (" << bytes_text(e.memory.total()) << " of " << bytes_text(c.usable_memory_bytes())
      << ")";
  if (l.tp > 1)
    out << "; tp " << l.tp << (e.tp_inter_node ? " across nodes" : " within a node");
  else
    out << "; no tp traffic";
  if (l.cp > 1)
    out << "; each sequence over cp " << l.cp << " (ring attention skips the blocks the mask "
        << "hides), the ring's exposed traffic " << percent(e.time.cp / e.time.total())
        << " of the step";
  if (l.pp > 1)
    out << "; pp " << l.pp << (e.pp_inter_node ? " across nodes" : "") << ", bubble "
        << percent(e.time.bubble_fraction());
  else
    out << "; no pipeline bubble";
  if (l.dp > 1) {
    static const char* const kHow[] = {
        "gradients all-reduced (ZeRO-0)", "optimizer states sharded (ZeRO-1)",
        "gradients and optimizer states sharded (ZeRO-2)", "everything sharded (ZeRO-3)"};
    out << "; dp " << l.dp << (e.dp_inter_node ? " across nodes" : "") << ", "
        << kHow[std::clamp(l.zero, 0, 3)] << ", its traffic " << percent(e.time.dp / e.time.total())
        << " of the step after overlap";
  }
  out << "; compute " << percent(e.time.compute / e.time.total()) << " of the step";
  if (plan.ranked.size() > 1) {
    const Evaluation& next = plan.ranked[1];
    const double gain = next.time.total() / e.time.total() - 1;
    if (gain < 0.005 && e.memory.total() <= next.memory.total())
      out << "; as fast as " << next.layout.name() << " (within 0.5%) with less memory ("
          << bytes_text(e.memory.total()) << " against " << bytes_text(next.memory.total()) << ")";
    else if (gain < 0.005)
      out << "; within 0.5% of " << next.layout.name() << ", which needs less memory ("
          << bytes_text(next.memory.total()) << " against " << bytes_text(e.memory.total()) << ")";
    else
      out << "; " << percent(gain) << " faster than " << next.layout.name() << ", which loses on "
          << biggest_difference(e.time, next.time);
  }
  return out.str();
}

}  // namespace trident::plan
