// `trident schedule`'s printed report: compute order, timeline, in-flight micro-batches,
// bubble against the formula, checker verdict.
#include "pipeline/schedule_cli.h"

#include <algorithm>  // std::max, std::min
#include <cmath>      // std::lround
#include <cstdio>     // std::snprintf
#include <ostream>    // std::ostream
#include <string>     // std::string, std::to_string

#include "pipeline/rendezvous_checker.h"  // check_rendezvous

namespace trident::pipeline {
namespace {

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

}  // namespace

bool print_schedule_report(const ScheduleReportOptions& a, std::ostream& out) {
  const int pp = a.pp;
  const int m = a.micro_batches;
  const int v = a.virtual_stages;
  const std::vector<Schedule> per_stage = make_schedules(a.schedule, pp, m, v);
  const PipelineSchedule kind = *parse_choice<PipelineSchedule>(a.schedule);  // made above
  const CheckReport report = check_schedules(per_stage, m, a.forward_cost, a.backward_cost);

  out << "schedule " << a.schedule << ", pp " << pp << ", micro-batches " << m;
  if (kind == PipelineSchedule::kInterleaved1F1B) out << ", virtual stages " << v;
  out << ", forward cost " << a.forward_cost << ", backward cost " << a.backward_cost;
  if (kind == PipelineSchedule::kZbH1) out << " (B and W " << a.backward_cost / 2 << " each)";
  if (kind == PipelineSchedule::kInterleaved1F1B) out << " per chunk";
  out << "\n\n";
  out << "compute order:\n";
  for (int s = 0; s < pp; ++s) out << "  stage " << s << ": " << to_string(per_stage[s]) << "\n";
  if (a.full) {
    out << "\ninstructions (RA/SA = recv/send activation, RG/SG = recv/send gradient";
    if (kind == PipelineSchedule::kZbH1) out << ", BI/W = input/weight half of a backward";
    if (kind == PipelineSchedule::kInterleaved1F1B) out << ", cN = model chunk N";
    out << "):\n";
    for (int s = 0; s < pp; ++s) {
      out << "  stage " << s << ": " << to_string(per_stage[s], /*compute_only=*/false) << "\n";
    }
  }
  const int unit = timeline_unit(per_stage);
  out << "\ntimeline (" << unit << " columns per forward-cost unit, '.' = idle):\n"
      << render_timeline(per_stage, report, a.forward_cost);
  out << "\nmax in-flight micro-batches (forwarded, not yet backwarded):\n";
  for (int s = 0; s < pp && s < static_cast<int>(report.max_in_flight.size()); ++s) {
    out << "  stage " << s << ": " << report.max_in_flight[s] << "\n";
  }
  const double formula = schedule_bubble_formula(kind, pp, m, v, a.forward_cost, a.backward_cost);
  out << "\nbubble fraction: " << fixed(report.bubble_fraction, 6)
      << " (idle / total stage-time); ";
  if (kind == PipelineSchedule::kInterleaved1F1B) {
    out << "(p-1)/(v*m+p-1) = " << pp - 1 << "/" << v * m + pp - 1;
  } else if (kind == PipelineSchedule::kZbH1) {
    out << "(p-1)(F+B-W)/(m(F+B+W)+(p-1)(F+B-W))";
  } else {
    out << "(p-1)/(m+p-1) = " << pp - 1 << "/" << m + pp - 1;
  }
  out << " = " << fixed(formula, 6) << "\n";
  if (report.ok) {
    out << "checker: ok (every send meets its receive in FIFO order, no deadlock, every "
           "micro-batch forwarded and backwarded once per stage)\n";
  } else {
    out << "checker: FAILED: " << report.error << "\n";
  }
  // Where a send waits for its receive (NCCL, with a one-way channel per neighbour and kind).
  const std::string nccl = check_rendezvous(per_stage, Channels::kPerLink);
  out << "on GPUs (NCCL): " << (nccl.empty() ? "ok" : "refused: " + nccl) << "\n";
  return report.ok;
}

int timeline_unit(const std::vector<Schedule>& per_stage) {
  int widest = 2;  // "F0"
  for (const Schedule& list : per_stage) {
    for (const Instruction& in : compute_only(list)) {
      widest = std::max(widest, static_cast<int>(to_string(in).size()));
    }
  }
  return widest;
}

std::string render_timeline(const std::vector<Schedule>& per_stage, const CheckReport& report,
                            double forward_cost) {
  const int unit = timeline_unit(per_stage);
  const auto column = [&](double t) {
    return static_cast<int>(std::lround(t / forward_cost * unit));
  };
  const int width = column(report.makespan);
  std::string text;
  for (size_t s = 0; s < per_stage.size(); ++s) {
    std::string row(width, '.');
    const Schedule compute = compute_only(per_stage[s]);
    const auto& spans =
        s < report.timeline.size() ? report.timeline[s] : std::vector<std::pair<double, double>>{};
    for (size_t k = 0; k < spans.size() && k < compute.size(); ++k) {
      const int begin = std::min(column(spans[k].first), width);
      const int end = std::min(column(spans[k].second), width);
      std::string label = to_string(compute[k]);
      label.resize(std::max(0, end - begin), ' ');
      row.replace(begin, label.size(), label);
    }
    text += "  stage " + std::to_string(s) + " |" + row + "|\n";
  }
  return text;
}

}  // namespace trident::pipeline
