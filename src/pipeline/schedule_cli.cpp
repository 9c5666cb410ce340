// `trident schedule`: argument parsing and the printed report (compute order, timeline,
// in-flight micro-batches, bubble against the formula, checker verdict).
#include "pipeline/schedule_cli.h"

#include <algorithm>  // std::max, std::min
#include <cmath>      // std::lround, std::isfinite
#include <cstdio>     // std::snprintf
#include <optional>   // std::optional
#include <ostream>    // std::ostream
#include <stdexcept>  // std::invalid_argument
#include <string>     // std::string, std::stoi, std::stod

namespace trident::pipeline {
namespace {

struct ScheduleArgs {
  std::optional<int> pp;
  std::optional<int> micro_batches;
  std::string schedule = "1f1b";
  bool full = false;
  bool help = false;
  double forward_cost = 1.0;
  double backward_cost = 2.0;
};

// A bad command line; the message names the argument.
struct BadArgument : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

int positive_int(const std::string& name, const std::string& value) {
  size_t used = 0;
  int parsed = 0;
  try {
    parsed = std::stoi(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || parsed < 1) {
    throw BadArgument(name + " expects a positive integer, got '" + value + "'");
  }
  return parsed;
}

double positive_double(const std::string& name, const std::string& value) {
  size_t used = 0;
  double parsed = 0.0;
  try {
    parsed = std::stod(value, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (used != value.size() || value.empty() || !(parsed > 0.0) || !std::isfinite(parsed)) {
    throw BadArgument(name + " expects a positive number, got '" + value + "'");
  }
  return parsed;
}

ScheduleArgs parse_args(const std::vector<std::string>& args) {
  ScheduleArgs parsed;
  for (size_t i = 0; i < args.size(); ++i) {
    std::string name = args[i];
    std::optional<std::string> value;
    if (const size_t eq = name.find('='); name.rfind("--", 0) == 0 && eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    }
    const auto take_value = [&]() -> std::string {
      if (value) return *value;
      if (i + 1 >= args.size()) throw BadArgument(name + " needs a value");
      return args[++i];
    };
    if (name == "--help" || name == "-h") {
      parsed.help = true;
    } else if (name == "--full") {
      parsed.full = true;
    } else if (name == "--pp") {
      parsed.pp = positive_int(name, take_value());
    } else if (name == "--micro-batches") {
      parsed.micro_batches = positive_int(name, take_value());
    } else if (name == "--schedule") {
      parsed.schedule = take_value();
      if (parsed.schedule != "1f1b" && parsed.schedule != "gpipe") {
        throw BadArgument("--schedule must be 1f1b or gpipe, got '" + parsed.schedule + "'");
      }
    } else if (name == "--forward-cost") {
      parsed.forward_cost = positive_double(name, take_value());
    } else if (name == "--backward-cost") {
      parsed.backward_cost = positive_double(name, take_value());
    } else {
      throw BadArgument("unknown argument '" + args[i] + "'");
    }
  }
  if (parsed.help) return parsed;
  if (!parsed.pp) throw BadArgument("--pp is required (the number of pipeline stages)");
  if (!parsed.micro_batches) throw BadArgument("--micro-batches is required");
  return parsed;
}

std::string fixed(double value, int digits) {
  char buffer[64];
  std::snprintf(buffer, sizeof(buffer), "%.*f", digits, value);
  return buffer;
}

// Prints the report; returns whether the checker accepts the schedules.
bool print_report(const ScheduleArgs& a, std::ostream& out) {
  const int pp = *a.pp;
  const int m = *a.micro_batches;
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

}  // namespace

std::string schedule_usage() {
  return "usage: trident schedule --pp P --micro-batches M [--schedule 1f1b|gpipe] [--full]\n"
         "                        [--forward-cost F] [--backward-cost B]\n"
         "\n"
         "Prints the pipeline schedule of every stage, checks all stages together\n"
         "(every send meets its receive, no deadlock) and reports the bubble.\n"
         "\n"
         "  --pp P              number of pipeline stages (required)\n"
         "  --micro-batches M   micro-batches per optimizer step (required)\n"
         "  --schedule NAME     1f1b (default) or gpipe\n"
         "  --full              also print every instruction, sends and receives included\n"
         "  --forward-cost F    time of one forward (default 1)\n"
         "  --backward-cost B   time of one backward (default 2)\n"
         "  --help              this text\n";
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

int run_schedule_command(const std::vector<std::string>& args, std::ostream& out,
                         std::ostream& err) {
  ScheduleArgs parsed;
  try {
    parsed = parse_args(args);
  } catch (const BadArgument& e) {
    err << "trident schedule: " << e.what() << " (see trident schedule --help)\n";
    return 2;
  }
  if (parsed.help) {
    out << schedule_usage();
    return 0;
  }
  try {
    return print_report(parsed, out) ? 0 : 1;
  } catch (const std::invalid_argument& e) {
    err << "trident schedule: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace trident::pipeline
