#include "search/search_report.h"

#include <cmath>
#include <cstdio>

#include "shared/json_writer.h"
#include "shared/number_format.h"

namespace tandem::search {

namespace {

bool simulated_ok(const RankedPoint& p) { return p.simulated.status == sweep::PointStatus::kOk; }

// What limits the point: memory when its planned peak is within 10 % of HBM, else the estimate's
// largest non-kernel term.
std::string limit_of(const RankedPoint& p, int64_t hbm) {
  if (hbm > 0 && double(p.planned_peak_bytes) > 0.9 * double(hbm)) return "memory";
  return p.estimate.limit();
}

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

}  // namespace

std::string search_table(const SearchResult& r) {
  std::string out;
  out += "tandem search: " + r.scenario_name + " on " + std::to_string(r.gpus) + " GPUs: " + std::to_string(r.points) +
         " points, " + std::to_string(r.valid) + " valid, " + std::to_string(r.out_of_memory) +
         " out of memory (of " + std::to_string(r.memory_planned) + " checked: " +
         std::to_string(r.out_of_memory_by_bound) + " over HBM by the lower bound without a plan)" +
         (r.vary_batch ? "; global batch searched too, ranked by tokens/s" : "") + "\n";
  for (const auto& [rule, c] : r.invalid) out += "  invalid " + std::to_string(c.count) + ": " + rule + "\n";
  for (const auto& [rule, n] : r.pruned) out += "  pruned " + std::to_string(n) + ": " + rule + "\n";
  out += "  estimate: " + std::to_string(r.points) + " points in " + format_number("%.3f", r.estimate_wall_s) + " s wall, " +
         format_number("%.3f", r.estimate_cpu_s) + " s CPU (" +
         format_number("%.0f", r.estimate_cpu_s > 0 ? double(r.points) / r.estimate_cpu_s : 0.0) + " points per CPU second), " +
         std::to_string(r.probes) + " layer probes\n";
  out += "\n  #  iteration s  [80 % interval]          tokens/s    MFU %  peak GiB  estimate s  limit         strategy\n";
  int rank = 0;
  for (const RankedPoint& p : r.best) {
    const sweep::PointResult& s = p.simulated;
    const bool ok = simulated_ok(p);
    char line[320];
    const double peak = double(ok ? s.peak_memory_bytes : p.planned_peak_bytes) / 1073741824.0;
    if (ok) {
      std::snprintf(line, sizeof line, "%3d  %11.4g  [%.4g, %.4g]%*s %10.4g  %7.1f  %8.2f  %10.4g  %-12s  ", ++rank,
                    s.iteration_time_s, s.iteration_time_low_s, s.iteration_time_high_s, 1, "", s.tokens_per_s,
                    100.0 * s.mfu, peak, p.estimate.iteration_s, limit_of(p, r.hbm_bytes).c_str());
    } else {
      std::snprintf(line, sizeof line, "%3d  %11s  %-24s %10s  %7s  %8.2f  %10.4g  %-12s  ", ++rank, "-",
                    s.reason.empty() ? "(not simulated)" : sweep::to_string(s.status), "-", "-", peak,
                    p.estimate.iteration_s, limit_of(p, r.hbm_bytes).c_str());
    }
    out += line + joined(p.sets) + (p.ties ? " (+" + std::to_string(p.ties) + " ties)" : "") + "\n";
    if (!ok && !s.reason.empty()) out += "       " + s.reason + "\n";
    if (ok && !s.approximate.empty()) out += "       (approximate: " + s.approximate + ")\n";
  }
  return out;
}

std::string search_json(const SearchResult& r) {
  JsonWriter w;
  w.begin_object();
  w.key("format").string("tandem-search-1");
  w.key("scenario").string(r.scenario_path);
  w.key("scenario_name").string(r.scenario_name);
  w.key("gpus").integer(r.gpus);
  w.key("sets").begin_array();
  for (const std::string& s : r.sets) w.string(s);
  w.end_array();
  w.key("points").integer(r.points);
  w.key("valid").integer(r.valid);
  w.key("invalid").begin_object();
  for (const auto& [rule, c] : r.invalid) w.key(rule).integer(c.count);
  w.end_object();
  w.key("invalid_examples").begin_object();
  for (const auto& [rule, c] : r.invalid) w.key(rule).string(c.example);
  w.end_object();
  w.key("pruned").begin_object();
  for (const auto& [rule, n] : r.pruned) w.key(rule).integer(n);
  w.end_object();
  w.key("out_of_memory").integer(r.out_of_memory);
  w.key("memory_planned").integer(r.memory_planned);
  w.key("probes").integer(r.probes);
  w.key("estimate_wall_s").number(r.estimate_wall_s, 4);
  w.key("estimate_cpu_s").number(r.estimate_cpu_s, 4);
  w.key("ranked_by").string(r.vary_batch ? "tokens_per_s" : "iteration_time_s");
  w.key("results").begin_array();
  int rank = 0;
  for (const RankedPoint& p : r.best) {
    const sweep::PointResult& s = p.simulated;
    const bool ok = simulated_ok(p);
    w.line_break();
    w.begin_object();
    w.key("rank").integer(++rank);
    w.key("sets").begin_array();
    for (const std::string& a : p.sets) w.string(a);
    w.end_array();
    w.key("status").string(s.reason.empty() && !ok ? "not simulated" : sweep::to_string(s.status));
    w.key("reason").string(s.reason);
    w.key("iteration_time_s").number(ok ? s.iteration_time_s : NAN);
    w.key("iteration_time_interval_s");
    if (ok) w.begin_array().number(s.iteration_time_low_s).number(s.iteration_time_high_s).end_array();
    else w.null();
    w.key("tokens_per_s").number(ok ? s.tokens_per_s : NAN);
    w.key("mfu").number(ok ? s.mfu : NAN);
    if (ok) w.key("peak_memory_bytes").integer(s.peak_memory_bytes);
    else w.key("peak_memory_bytes").null();
    w.key("estimated_iteration_time_s").number(p.estimate.iteration_s);
    w.key("planned_peak_memory_bytes").integer(p.planned_peak_bytes);
    w.key("limit").string(limit_of(p, r.hbm_bytes));
    w.key("ties").integer(p.ties);
    // Only on a point tandem search --approximate kept approximate: an exact search is unchanged.
    if (ok && !s.approximate.empty()) w.key("approximate").string(s.approximate);
    w.end_object();
  }
  w.line_break();
  w.end_array();
  w.end_object();
  return w.take() + "\n";
}

}  // namespace tandem::search
