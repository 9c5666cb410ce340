// choose_configuration: every candidate evaluated by the planner's models, ranked by
// predicted step time among those under the budget.
#include "plan/auto_config.h"

#include <algorithm>  // std::stable_sort, std::min, std::count_if
#include <cstdio>     // std::snprintf
#include <sstream>    // std::ostringstream

#include "plan/memory_model.h"  // device_memory

namespace trident::plan {

namespace {

std::string seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g s", s);
  return buf;
}

std::string percent_text(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, fraction < 0.01 ? "%.2f%%" : "%.1f%%", fraction * 100);
  return buf;
}

PlanModel placed(PlanModel m, const ScheduleChoice& s, const Placement& p) {
  m.schedule = s.schedule;
  m.virtual_stages = s.virtual_stages;
  m.offload_optimizer = p.optimizer ? "nvme" : "none";
  m.offload_params = p.params ? "nvme" : "none";
  m.releases_host_memory =
      m.allocator == "release" || (m.allocator == "auto" && (p.optimizer || p.params));
  return m;
}

/// The schedules trident runs `l` with: any one on a single stage (1F1B is named); with
/// pp > 1 1F1B, interleaved 1F1B with the fewest chunks that divide a stage's layers when
/// the micro-batches come in rounds of pp, and ZB-H1; the last two not with ZeRO 3.
std::vector<ScheduleChoice> schedules_for(const PlanModel& m, const Layout& l) {
  std::vector<ScheduleChoice> out = {{"1f1b", 1}};
  if (l.pp == 1 || l.zero == 3) return out;
  const int64_t per_stage = m.layers / l.pp;
  for (int64_t v = 2; v <= per_stage; ++v)
    if (per_stage % v == 0) {
      if (l.micro_batches(m) % l.pp == 0) out.push_back({"interleaved-1f1b", v});
      break;
    }
  out.push_back({"zb-h1", 1});
  return out;
}

/// The placements a layout can take: in memory always; with a tier directory, the
/// optimizer's states there (and from ZeRO 2 its gradient shard), and with ZeRO 3 the
/// parameters too.
std::vector<Placement> placements_for(const Layout& l, bool tier) {
  std::vector<Placement> out = {{"in memory", l.zero, false, false}};
  if (!tier) return out;
  out.push_back({l.zero >= 2 ? "optimizer states and gradients in the nvme tier"
                             : "optimizer states in the nvme tier",
                 l.zero, true, false});
  if (l.zero == 3) out.push_back({"everything in the nvme tier", 3, true, true});
  return out;
}

/// Every layout of the planner's enumeration, and on one dp rank ZeRO 3 too (the only
/// stage whose parameters can go to the tier); each without recomputation also with
/// selective recomputation, and each with tp > 1 also with sequence parallelism.
std::vector<Layout> layouts_for(const PlanModel& m, const AutoBudget& b, bool tier) {
  SearchSpace space;
  std::vector<Layout> out = enumerate_layouts(m, b.ranks, b.ranks_per_node, space);
  const size_t n = out.size();
  if (tier)
    for (size_t i = 0; i < n; ++i)
      if (out[i].replicas() == 1) {
        Layout l = out[i];
        l.zero = 3;
        out.push_back(l);
      }
  for (size_t i = 0, end = out.size(); i < end; ++i)
    if (!out[i].checkpointing) {
      Layout l = out[i];
      l.selective = true;
      out.push_back(l);
    }
  for (size_t i = 0, end = out.size(); i < end; ++i)
    if (out[i].tp > 1 && (m.seq_len / out[i].cp) % out[i].tp == 0) {
      Layout l = out[i];
      l.sequence_parallel = true;
      out.push_back(l);
    }
  return out;
}

AutoChoice search(const PlanModel& m, const Cluster& c, const AutoBudget& b) {
  AutoChoice choice;
  const bool tier = b.disk_per_rank >= 0;
  const double limit = (1 - b.margin) * b.memory_per_rank;
  bool have_smallest = false;
  for (const Layout& l : layouts_for(m, b, tier)) {
    for (const ScheduleChoice& s : schedules_for(m, l)) {
      for (const Placement& p : placements_for(l, tier)) {
        AutoCandidate cand;
        cand.layout = l;
        cand.schedule = s;
        cand.placement = p;
        const PlanModel here = placed(m, s, p);
        cand.evaluation = evaluate(here, l, c);
        cand.releases_host_memory = here.releases_host_memory;
        // The heap holds the state of a CPU rank, whose peak RSS the calibrated process
        // base makes the prediction (a device's memory has its own allocator).
        const bool kept_heap = c.process_base_gb > 0 && !here.releases_host_memory;
        const double heap = kept_heap ? 1.0 + b.kept_heap_allowance : 1.0;
        const double base = c.process_base_gb * 1e9;
        cand.peak = heap * cand.evaluation.memory.total() + base;
        if (kept_heap && m.allocator == "auto" && cand.peak > limit &&
            cand.evaluation.memory.total() + base <= limit) {
          // What the kept blocks would add does not fit, the live memory does: the rank keeps
          // freed blocks only within the most ever in use (train.allocator = "release"),
          // which cost a Llama of hidden 640 on 2 pipeline stages no time (0.923 against
          // 0.921 s) and 105 MB of peak RSS less (docs/performance.md).
          cand.releases_host_memory = true;
          cand.peak = cand.evaluation.memory.total() + base;
        }
        cand.tier_bytes = cand.evaluation.memory.offloaded;
        ++choice.considered;
        if (!have_smallest || cand.peak < choice.smallest.peak) {
          choice.smallest = cand;
          have_smallest = true;
        }
        if (cand.peak <= limit && (!tier || cand.tier_bytes <= b.disk_per_rank))
          choice.ranked.push_back(cand);
      }
    }
  }
  std::stable_sort(choice.ranked.begin(), choice.ranked.end(),
                   [](const AutoCandidate& a, const AutoCandidate& z) {
                     const double ta = a.evaluation.time.total(), tz = z.evaluation.time.total();
                     if (ta != tz) return ta < tz;
                     return a.peak < z.peak;
                   });
  return choice;
}

std::string explain(const AutoChoice& choice, const AutoBudget& b) {
  const AutoCandidate& best = choice.ranked.front();
  std::ostringstream out;
  out << "fastest of " << choice.fitting << " configurations that fit "
      << bytes_text((1 - b.margin) * b.memory_per_rank) << " per rank (" << choice.considered
      << " considered)";
  if (choice.ranked.size() > 1) {
    const AutoCandidate& next = choice.ranked[1];
    const double t0 = best.evaluation.time.total(), t1 = next.evaluation.time.total();
    if (t1 == t0)
      out << "; as fast as the runner-up, with less memory (" << bytes_text(best.peak)
          << " against " << bytes_text(next.peak) << ")";
    else {
      out << "; the runner-up is " << percent_text(t1 / t0 - 1) << " slower, losing on "
          << biggest_difference(best.evaluation.time, next.evaluation.time);
      // What it wins back elsewhere, when that is most of what it loses.
      const auto [part, gain] = largest_part_difference(next.evaluation.time, best.evaluation.time);
      if (gain > 0.5 * (t1 - t0))
        out << " and gaining on " << part << " (-" << seconds(gain) << ")";
    }
  }
  return out.str();
}

/// When nothing fits: the smallest change that would, tried in order of cost to the user.
std::string suggest(const PlanModel& m, const Cluster& c, const AutoBudget& b,
                    const AutoChoice& none) {
  const double limit = (1 - b.margin) * b.memory_per_rank;
  if (b.disk_per_rank < 0 && b.tier_possible) {
    AutoBudget with_tier = b;
    with_tier.disk_per_rank = 1e300;
    const AutoChoice t = search(m, c, with_tier);
    if (!t.ranked.empty())
      return "set parallel.nvme_path to a directory on a local disk: " + t.ranked.front().name() +
             " fits (" + bytes_text(t.ranked.front().peak) + " per rank, " +
             bytes_text(t.ranked.front().tier_bytes) + " of tier files per rank)";
  }
  for (int more = 2; more <= 64; more *= 2) {
    AutoBudget bigger = b;
    bigger.ranks = b.ranks * more;
    const AutoChoice t = search(m, c, bigger);
    if (!t.ranked.empty())
      return "run on " + std::to_string(bigger.ranks) +
             " ranks with as much memory each: " + t.ranked.front().name() + " fits (" +
             bytes_text(t.ranked.front().peak) + " per rank)";
  }
  return "give each rank " + bytes_text(none.smallest.peak / (1 - b.margin)) +
         " of memory: " + none.smallest.name() + " needs " + bytes_text(none.smallest.peak) +
         " (the budget is " + bytes_text(limit) + " after the " +
         std::to_string(static_cast<int>(b.margin * 100)) + "% margin)";
}

}  // namespace

std::string AutoCandidate::name() const {
  std::string text = layout.name();
  if (layout.pp > 1) {
    text += " " + schedule.schedule;
    if (schedule.virtual_stages > 1) text += " v" + std::to_string(schedule.virtual_stages);
  }
  return text + ", " + placement.name;
}

AutoChoice choose_configuration(const PlanModel& m, const Cluster& cluster,
                                const AutoBudget& budget, const CandidateCheck& check,
                                size_t keep) {
  AutoChoice choice = search(m, cluster, budget);
  choice.fitting = static_cast<int>(choice.ranked.size());
  std::vector<double> fitting_s, refused_s;
  for (const AutoCandidate& c : choice.ranked) fitting_s.push_back(c.evaluation.time.total());
  if (check) {
    std::vector<AutoCandidate> kept;
    for (AutoCandidate& c : choice.ranked) {
      if (kept.size() == keep) break;
      const std::string why = check(c);
      if (why.empty()) {
        kept.push_back(std::move(c));
      } else {
        choice.refused.push_back(c.name() + ": " + why);
        refused_s.push_back(c.evaluation.time.total());
      }
    }
    choice.ranked = std::move(kept);
  }
  if (!choice.ranked.empty()) {
    const double band = (1 + budget.near_tie) * choice.ranked.front().evaluation.time.total();
    auto within = [band](double s) { return s <= band; };
    choice.near_ties = static_cast<int>(std::count_if(fitting_s.begin(), fitting_s.end(), within) -
                                        std::count_if(refused_s.begin(), refused_s.end(), within)) -
                       1;
  }
  if (choice.ranked.empty())
    choice.suggestion = choice.considered == 0
                            ? "no layout divides the model over " + std::to_string(budget.ranks) +
                                  " ranks: use a rank count that divides the heads or the layers"
                            : suggest(m, cluster, budget, choice);
  else
    choice.why = explain(choice, budget);
  return choice;
}

std::vector<std::string> overrides_of(const AutoCandidate& c) {
  const Layout& l = c.layout;
  std::vector<std::string> keys = {
      "parallel.dp=" + std::to_string(l.dp),
      "parallel.pp=" + std::to_string(l.pp),
      "parallel.tp=" + std::to_string(l.tp),
      "parallel.zero_stage=" + std::to_string(l.zero),
      "train.micro_batch_size=" + std::to_string(l.micro_batch),
      std::string("parallel.activation_checkpointing=") + (l.checkpointing ? "full"
                                                           : l.selective   ? "selective"
                                                                           : "none"),
      std::string("parallel.sequence_parallel=") + (l.sequence_parallel ? "true" : "false"),
      "parallel.schedule=" + c.schedule.schedule,
      "parallel.virtual_stages=" + std::to_string(c.schedule.virtual_stages),
      std::string("parallel.offload_optimizer=") + (c.placement.optimizer ? "nvme" : "none"),
      std::string("parallel.offload_params=") + (c.placement.params ? "nvme" : "none"),
      "parallel.cp=" + std::to_string(l.cp),
      "parallel.ep=" + std::to_string(l.ep)};
  if (switched_to_release(c)) keys.push_back("train.allocator=release");
  return keys;
}

bool switched_to_release(const AutoCandidate& c) {
  return c.releases_host_memory && !c.placement.optimizer && !c.placement.params;
}

std::string release_note(const AutoCandidate& c) {
  return switched_to_release(c) ? " with train.allocator = release" : "";
}

std::string auto_choice_text(const AutoChoice& choice, const AutoBudget& b, bool measuring) {
  std::ostringstream out;
  out << "auto: " << b.ranks << " ranks, " << bytes_text(b.memory_per_rank)
      << " of memory per rank";
  if (b.disk_per_rank >= 0) out << ", " << bytes_text(b.disk_per_rank) << " of disk per rank";
  out << "\n";
  for (size_t i = 0; i < std::min<size_t>(3, choice.refused.size()); ++i)
    out << "auto: the config refuses " << choice.refused[i] << "\n";
  if (choice.refused.size() > 3)
    out << "auto: ... and " << choice.refused.size() - 3 << " more configurations it refuses\n";
  if (choice.ranked.empty()) {
    out << "auto: nothing fits";
    if (choice.considered > 0)
      out << " (the smallest of " << choice.considered << " configurations, "
          << choice.smallest.name() << ", needs " << bytes_text(choice.smallest.peak)
          << " per rank)";
    out << "; " << choice.suggestion << "\n";
    return out.str();
  }
  auto line = [&](const char* what, const AutoCandidate& c) {
    out << "auto: " << what << " " << c.name() << ": predicted step "
        << seconds(c.evaluation.time.total()) << ", peak " << bytes_text(c.peak) << " per rank"
        << release_note(c);
    if (c.tier_bytes > 0) out << ", " << bytes_text(c.tier_bytes) << " in the tier";
    out << "\n";
  };
  line("chose", choice.ranked.front());
  if (choice.ranked.size() > 1) line("runner-up", choice.ranked[1]);
  out << "auto: " << choice.why << "\n";
  if (choice.near_ties > 0 && !measuring) {
    // Measuring a few settles what the model cannot: more would cost their start-ups.
    const int k = std::min(choice.near_ties + 1, 4);
    const bool one = choice.near_ties == 1;
    out << "auto: " << choice.near_ties << (one ? " other configuration is" : " others are")
        << " predicted within " << percent_text(b.near_tie) << " of the choice, nearer than"
        << " the model orders reliably (docs/planner.md); `trident train --auto --measure " << k
        << "` trains the best " << k << " for a few steps each and keeps the fastest\n";
  }
  return out.str();
}

}  // namespace trident::plan
