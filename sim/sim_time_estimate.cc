#include "sim/sim_time_estimate.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "shared/error.h"

namespace tandem::sim {

// The estimate, term by term (seconds of one core of the 2-core development VM, 2.1 GHz, quiet;
// the measurements are in docs/sim.md, "Wall-time estimate"):
//  - kBase: start, loading, SimGrid's engine, the fork, the report.
//  - per class task: generating and analysing each class program once; per replayed task: the
//    event loop and the memory ledger for every task of every replayed unit (folded tp lanes count
//    once). Both from the profile of GPT-3 175B on 1024 GPUs (docs/sim.md, "Performance"): 3.2 s
//    generating 2.87 M class tasks (1.1 us each), 2.7 s replaying 23 M tasks (0.12 us each).
//  - per collective square: a collective whose group spans nodes costs the replay about n^2 x
//    5 us for a group of n: its ~16 n flows are all in SimGrid at once, and SimGrid 3.32 walks
//    the list of every flow in flight each time one ends (docs/sim.md, "Speed at 1k-8k GPUs").
//    tiny-gpt, pure data parallelism, 2 gradient all-reduces over all n GPUs, user CPU time of
//    `tandem sim --json` on the loaded VM: n = 256: 0.36 s, 512: 1.85 s, 1024: 10.75 s, that is
//    10.75 s / (2 x 1024^2) = 5.1 us (512: 3.5 us, 256: 2.7 us: the estimate is high there).
//    (Before session 5 it was n^3 x 0.85 us: each ended flow was tested again at every wait.)
//  - per rank: the platform's hosts, links and routes and the replay's per-rank tables; 20 us is a
//    lower bound (a 10^6-GPU child had used 44 s of CPU in its setup when stopped), not a fit.
namespace {

constexpr double kBase = 0.05;
constexpr double kPerRank = 20e-6;
constexpr double kPerClassTask = 1.1e-6;
constexpr double kPerReplayedTask = 0.12e-6;
constexpr double kPerCollectiveSquare = 5e-6;
// Replay cost per task without the shortcuts and with one flow per ring step, relative to the
// default: not fitted; 4 is an assumption (docs/sim.md, "Performance": the runs before the
// shortcuts were 1.2 to 10 times slower).
constexpr double kNoShortcutsFactor = 4.0;
constexpr double kStepFactor = 4.0;

std::string fixed(double v, int digits) {
  char s[32];
  std::snprintf(s, sizeof s, "%.*f", digits, v);
  return s;
}

std::string square(double v) {
  char s[32];
  std::snprintf(s, sizeof s, "%.3g", v);
  return s;
}

}  // namespace

TimeEstimate estimate_time(const SimWork& w, const SimOptions& o) {
  double per_task = kPerReplayedTask;
  if (!o.closed_form_uncontended || !o.fuse_compute) per_task *= kNoShortcutsFactor;
  if (o.granularity == Granularity::kStep) per_task *= kStepFactor;
  const double replayed = double(w.replayed_tasks());
  TimeEstimate t;
  t.seconds = kBase + kPerRank * double(w.world) + kPerClassTask * double(w.class_tasks) + per_task * replayed +
              kPerCollectiveSquare * w.collective_square;
  t.how = std::to_string(w.world) + " ranks, " + std::to_string(w.class_tasks) + " tasks in class programs, " +
          std::to_string(w.units) + " replayed units (" + std::to_string(w.fold) + " ranks each) of up to " +
          std::to_string(w.max_tasks) + " tasks: " +
          std::to_string(w.replayed_tasks()) + " tasks replayed, collectives of " + square(w.collective_square) +
          " member^2" +
          (w.flow_quotient > 1 ? " after the flow quotient 1/" + std::to_string(w.flow_quotient) : std::string());
  return t;
}

void check_time_estimate(const TimeEstimate& t, const std::string& what, const ResourceLimit& limit) {
  if (!(limit.max_time_s > 0) || t.seconds <= limit.max_time_s) return;
  const double hours = std::ceil(t.seconds / 3600.0 * 1.25);
  if (hours > 8760)
    throw Error(what + " would take about " + format_duration(t.seconds) + " of wall time (" + t.how +
                "), more than the limit of " + format_duration(limit.max_time_s) +
                " and than the longest --max-time (8760h, a year); make the run smaller");
  throw Error(what + " would take about " + format_duration(t.seconds) + " of wall time (" + t.how +
              "), more than the limit of " + format_duration(limit.max_time_s) +
              "; raise it with --max-time DURATION (e.g. --max-time " + fixed(hours, 0) +
              "h; 0 for no limit) or make the run smaller");
}

std::string format_duration(double s) {
  if (s < 100) return fixed(s, 0) + " s";
  if (s < 2 * 3600) return fixed(s / 60, 1) + " min";
  if (s < 1000 * 3600) return fixed(s / 3600, 1) + " h";
  char h[32];
  std::snprintf(h, sizeof h, "%.3g h", s / 3600);
  return h;
}

double parse_duration(const std::string& text, const std::string& flag) {
  const std::string rule = flag + ": expected a duration such as 90s, 30m, 2h or 0 (no limit), got '" + text + "'";
  if (text.empty() || !(std::isdigit(static_cast<unsigned char>(text[0])) || text[0] == '.')) throw Error(rule);
  errno = 0;
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  if (errno != 0 || !std::isfinite(v) || v < 0) throw Error(rule);
  const std::string unit(end);
  double scale = 0;
  if (unit.empty() || unit == "s") scale = 1;
  else if (unit == "m" || unit == "min") scale = 60;
  else if (unit == "h") scale = 3600;
  else throw Error(rule);
  const double seconds = v * scale;
  // Past a year is no limit a user means; refusing it keeps the arithmetic finite.
  if (seconds > 365.0 * 86400) throw Error(flag + ": at most a year (8760h), got '" + text + "'");
  return seconds;
}

}  // namespace tandem::sim
