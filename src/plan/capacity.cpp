// largest_models: a search over depth, each placement on its own.
#include "plan/capacity.h"

#include <algorithm>  // std::max

#include "plan/memory_model.h"  // device_memory
#include "plan/time_model.h"    // step_time

namespace trident::plan {

std::vector<Placement> capacity_placements(int zero) {
  return {{"in memory", zero, false, false},
          {"optimizer states and gradients in the nvme tier", std::max(zero, 2), true, false},
          {"everything in the nvme tier", 3, true, true}};
}

namespace {

struct Fit {
  bool memory = false, disk = false;
  double peak_rss = 0, tier_bytes = 0;
  bool fits() const { return memory && disk; }
};

PlanModel placed(PlanModel m, const Placement& p, int64_t layers) {
  m.layers = layers;
  m.offload_optimizer = p.optimizer ? "nvme" : "none";
  m.offload_params = p.params ? "nvme" : "none";
  return m;
}

Fit fit(const PlanModel& m, const Layout& l, const Cluster& c, double memory_bytes,
        double disk_bytes) {
  const MemoryBreakdown mem = device_memory(m, l);
  Fit f;
  f.peak_rss = mem.total() + c.process_base_gb * 1e9;
  f.tier_bytes = mem.offloaded;
  f.memory = f.peak_rss <= memory_bytes;
  f.disk = f.tier_bytes <= disk_bytes;
  return f;
}

}  // namespace

std::vector<CapacityRow> largest_models(const PlanModel& m, Layout layout, const Cluster& c,
                                        double memory_bytes, double disk_bytes,
                                        int64_t max_layers) {
  layout.checkpointing = true;
  layout.selective = false;
  const int64_t step = std::max(layout.pp, 1);
  std::vector<CapacityRow> rows;
  for (const Placement& p : capacity_placements(layout.zero)) {
    Layout l = layout;
    l.zero = p.zero;
    auto at = [&](int64_t k) {
      return fit(placed(m, p, k * step), l, c, memory_bytes, disk_bytes);
    };
    CapacityRow row;
    row.placement = p;
    // Memory and tier bytes grow with depth: the largest k that fits, by bisection.
    int64_t lo = 0, hi = max_layers / step;
    if (at(hi).fits()) {
      lo = hi;
    } else {
      while (hi - lo > 1) {
        const int64_t mid = lo + (hi - lo) / 2;
        (at(mid).fits() ? lo : hi) = mid;
      }
      const Fit over = at(lo + 1);
      row.limit = !over.memory ? "memory" : "disk";
    }
    if (lo > 0) {
      const PlanModel best = placed(m, p, lo * step);
      const Fit f = at(lo);
      row.layers = lo * step;
      row.parameters = total_parameters(best);
      row.peak_rss = f.peak_rss;
      row.tier_bytes = f.tier_bytes;
      row.step_s = step_time(best, l, c).total();
    }
    rows.push_back(row);
  }
  return rows;
}

}  // namespace trident::plan
