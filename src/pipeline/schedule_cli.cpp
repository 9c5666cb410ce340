// `trident schedule`'s printed report: compute order, timeline, in-flight micro-batches,
// bubble against the formula, checker verdict.
#include "pipeline/schedule_cli.h"

#include <algorithm>  // std::max, std::min
#include <cmath>      // std::lround
#include <cstdio>     // std::snprintf
#include <ostream>    // std::ostream
#include <string>     // std::string, std::to_string

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
  std::vector<Schedule> per_stage;
  for (int s = 0; s < pp; ++s) per_stage.push_back(make_schedule(a.schedule, pp, s, m));
  const CheckReport report = check_schedules(per_stage, m, a.forward_cost, a.backward_cost);

  out << "schedule " << a.schedule << ", pp " << pp << ", micro-batches " << m << ", forward cost "
      << a.forward_cost << ", backward cost " << a.backward_cost << "\n\n";
  out << "compute order:\n";
  for (int s = 0; s < pp; ++s) out << "  stage " << s << ": " << to_string(per_stage[s]) << "\n";
  if (a.full) {
    out << "\ninstructions (RA/SA = recv/send activation, RG/SG = recv/send gradient):\n";
    for (int s = 0; s < pp; ++s) {
      out << "  stage " << s << ": " << to_string(per_stage[s], /*compute_only=*/false) << "\n";
    }
  }
  const size_t unit = 1 + std::to_string(m - 1).size();  // as in render_timeline
  out << "\ntimeline (" << unit << " columns per forward-cost unit, '.' = idle):\n"
      << render_timeline(per_stage, report, a.forward_cost);
  out << "\nmax in-flight micro-batches (forwarded, not yet backwarded):\n";
  for (int s = 0; s < pp && s < static_cast<int>(report.max_in_flight.size()); ++s) {
    out << "  stage " << s << ": " << report.max_in_flight[s] << "\n";
  }
  const double formula = bubble_formula(pp, m);
  out << "\nbubble fraction: " << fixed(report.bubble_fraction, 6)
      << " (idle / total stage-time); (p-1)/(m+p-1) = " << pp - 1 << "/" << m + pp - 1 << " = "
      << fixed(formula, 6) << "\n";
  if (report.ok) {
    out << "checker: ok (every send meets its receive in FIFO order, no deadlock, every "
           "micro-batch forwarded and backwarded once per stage)\n";
  } else {
    out << "checker: FAILED: " << report.error << "\n";
  }
  return report.ok;
}

std::string render_timeline(const std::vector<Schedule>& per_stage, const CheckReport& report,
                            double forward_cost) {
  int widest = 1;  // widest micro-batch number
  for (const Schedule& list : per_stage) {
    for (const Instruction& in : compute_only(list)) {
      widest = std::max(widest, static_cast<int>(std::to_string(in.micro_batch).size()));
    }
  }
  const int unit = widest + 1;  // columns per forward-cost unit: "F" + the number
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
