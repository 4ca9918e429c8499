#include "search/search_report_html.h"

#include <algorithm>
#include <cmath>

#include "search/agreement.h"
#include "shared/number_format.h"
#include "sim/prediction_interval.h"
#include "traces/atomic_file.h"
#include "traces/report/svg_plot.h"

namespace tandem::search {

namespace {

using svg::escape;

constexpr double kGiB = 1073741824.0;

const char* css() {
  return R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1300px;color:#222;padding:0 12px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;font-size:13px}table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}th{background:#f4f4f4}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
tr.pareto td{background:#eef7ee}.note{color:#666;font-size:12px}.reason{font-size:12px;color:#555}
svg.plot{display:block;margin:8px 0;max-width:100%;height:auto}code{font-size:12px})";
}

bool ok(const RankedPoint& p) { return p.simulated.status == sweep::PointStatus::kOk; }

std::string td(const std::string& s) { return "<td class=\"n\">" + escape(s) + "</td>"; }

std::string attr(const char* name, double v) { return std::string(" ") + name + "=\"" + format_number("%.9g", v) + "\""; }

std::string joined(const std::vector<std::string>& v) {
  std::string s;
  for (const std::string& a : v) s += (s.empty() ? "" : " ") + a;
  return s;
}

// "#3 strategy.dp=2 ..." (not "#" + ...: GCC 12's false -Wrestrict, bug 105329).
std::string point_label(size_t rank, const std::vector<std::string>& sets) {
  std::string s = std::to_string(rank);
  s.insert(s.begin(), '#');
  return s.append(" ").append(joined(sets));
}

std::string pareto_section(const SearchResult& r, const std::vector<bool>& front) {
  // Scatter of every simulated point, and the front as a staircase: the best throughput within
  // each memory budget (sorted by memory; throughput rises along it).
  std::vector<std::pair<double, size_t>> all, best;
  for (size_t i = 0; i < r.best.size(); ++i) {
    if (!ok(r.best[i])) continue;
    all.push_back({double(r.best[i].simulated.peak_memory_bytes) / kGiB, i});
    if (front[i]) best.push_back(all.back());
  }
  if (all.empty()) return "<p class=\"note\">No point was simulated.</p>\n";
  std::sort(all.begin(), all.end());
  std::sort(best.begin(), best.end());
  svg::Series points{"simulated points", "#9c9c9c", {}, {}}, line{"Pareto front", "#59a14f", {}, {}};
  points.markers = true, points.line = false;
  line.markers = true, line.step = true;
  for (const auto& [gib, i] : all) {
    points.x.push_back(gib);
    points.y.push_back(r.best[i].simulated.tokens_per_s);
    points.labels.push_back(point_label(i + 1, r.best[i].sets));
  }
  for (const auto& [gib, i] : best) {
    line.x.push_back(gib);
    line.y.push_back(r.best[i].simulated.tokens_per_s);
    line.labels.push_back(point_label(i + 1, r.best[i].sets));
  }
  svg::LinePlot spec;
  spec.x_label = "peak memory per GPU (GiB)";
  spec.y_label = "tokens/s";
  spec.height = 320;
  spec.y_from_zero = false;
  return "<p class=\"note\">The simulated points (grey) and those no other point beats on both throughput and peak "
         "memory (green, joined as the best throughput within each memory budget; highlighted in the table).</p>\n" +
         svg::line_plot(spec, {points, line});
}

std::string agreement_section(const SearchResult& r) {
  const Agreement a = agreement(r);
  std::string s = "<p id=\"agreement\"" + attr("data-points", double(a.points)) + attr("data-median-error", a.median_error) +
                  attr("data-worst-error", a.worst_error) + attr("data-kendall-tau", a.kendall_tau) + ">" +
                  std::to_string(a.points) + " simulated points: median |estimate / simulated &minus; 1| " +
                  format_number("%.1f", 100 * a.median_error) + " %, worst " +
                  format_number("%.1f", 100 * a.worst_error) + " %, Kendall's tau of the two orders " +
                  format_number("%.2f", a.kendall_tau) + ".</p>\n";
  if (a.points == 0) return s;
  std::vector<std::pair<double, size_t>> order;
  double lo = INFINITY, hi = 0;
  for (size_t i = 0; i < r.best.size(); ++i)
    if (ok(r.best[i])) {
      const double sim = r.best[i].simulated.iteration_time_s, est = r.best[i].estimate.iteration_s;
      order.push_back({sim, i});
      lo = std::min({lo, sim, est});
      hi = std::max({hi, sim, est});
    }
  std::sort(order.begin(), order.end());
  svg::Series points{"points", "#4e79a7", {}, {}}, diagonal{"estimate = simulation", "#e15759", {lo, hi}, {lo, hi}};
  points.markers = true, points.line = false;
  diagonal.dashed = true;
  for (const auto& [sim, i] : order) {
    points.x.push_back(sim);
    points.y.push_back(r.best[i].estimate.iteration_s);
    points.labels.push_back(point_label(i + 1, r.best[i].sets));
  }
  svg::LinePlot spec;
  spec.x_label = "simulated iteration time (s)";
  spec.y_label = "estimated iteration time (s)";
  spec.height = 320;
  spec.y_from_zero = false;
  return s + "<p class=\"note\">Each simulated point at its simulated (x) and estimated (y) iteration time; below the "
             "diagonal the estimate is optimistic. The search ranks by the estimate to choose what to simulate and "
             "answers with the simulator's order.</p>\n" +
         svg::line_plot(spec, {diagonal, points});
}

std::string table_section(const SearchResult& r, const std::vector<bool>& front) {
  std::string s = "<table><tr><th class=\"n\">#</th><th class=\"n\">iteration</th><th class=\"n\">" +
                  format_number("%.0f", 100 * sim::kIntervalCoverage) +
                  " % interval</th><th class=\"n\">tokens/s</th><th class=\"n\">MFU</th><th class=\"n\">peak memory</th>"
                  "<th class=\"n\">estimate</th><th class=\"n\">estimate / simulated &minus; 1</th><th>limit</th>"
                  "<th class=\"n\">ties</th><th>strategy (--set)</th></tr>\n";
  for (size_t i = 0; i < r.best.size(); ++i) {
    const RankedPoint& p = r.best[i];
    const sweep::PointResult& m = p.simulated;
    const bool sim = ok(p);
    s += std::string("<tr class=\"point") + (front[i] ? " pareto" : "") + "\"" + attr("data-rank", double(i + 1)) +
         attr("data-estimate-s", p.estimate.iteration_s);
    if (sim)
      s += attr("data-iteration-s", m.iteration_time_s) + attr("data-tokens-per-s", m.tokens_per_s) +
           attr("data-peak-bytes", double(m.peak_memory_bytes));
    s += '>';
    s += td(std::to_string(i + 1));
    if (sim) {
      s += td(format_number("%.4g s", m.iteration_time_s)) +
           td(format_number("%.4g", m.iteration_time_low_s) + "-" + format_number("%.4g s", m.iteration_time_high_s)) +
           td(format_number("%.4g", m.tokens_per_s)) + td(format_number("%.1f %%", 100 * m.mfu)) +
           td(format_gib(m.peak_memory_bytes));
    } else {
      s += "<td class=\"reason\" colspan=\"5\">" +
           escape(m.reason.empty() ? std::string("not simulated") : std::string(sweep::to_string(m.status)) + ": " + m.reason) +
           "</td>";
    }
    s += td(format_number("%.4g s", p.estimate.iteration_s)) +
         td(sim ? format_number("%+.1f %%", 100 * (p.estimate.iteration_s / m.iteration_time_s - 1)) : "") +
         "<td>" + escape(p.estimate.limit()) + "</td>" + td(std::to_string(p.ties)) + "<td><code>" +
         escape(joined(p.sets)) + "</code></td></tr>\n";
  }
  return s + "</table>\n<p class=\"note\">Best first by simulated " +
         (r.vary_batch ? "tokens/s (the global batch is searched too)" : "iteration time") + ". tokens/s = global batch &times; "
             "sequence length / iteration time; peak memory is the simulator's largest over ranks; the limit is the "
             "estimate's largest term beyond the kernels (docs/search.md); ties are points of the same estimate and "
             "planned peak, not simulated.</p>\n";
}

std::string rules_section(const SearchResult& r) {
  std::string s = "<table><tr><th class=\"n\">points</th><th>invalid: the loader's rule</th><th>example</th></tr>\n";
  for (const auto& [rule, c] : r.invalid)
    s += "<tr>" + td(std::to_string(c.count)) + "<td>" + escape(rule) + "</td><td class=\"reason\">" + escape(c.example) +
         "</td></tr>\n";
  for (const auto& [rule, n] : r.pruned) s += "<tr>" + td(std::to_string(n)) + "<td>pruned: " + escape(rule) + "</td><td></td></tr>\n";
  if (r.out_of_memory)
    s += "<tr>" + td(std::to_string(r.out_of_memory)) + "<td>out of memory (the planner's peak, or the model states' lower bound, over HBM)</td><td></td></tr>\n";
  return s + "</table>\n";
}

}  // namespace

std::string search_html(const SearchResult& r) {
  const std::string title = (r.scenario_name.empty() ? r.scenario_path : r.scenario_name) + " on " +
                            std::to_string(r.gpus) + " GPUs";
  const std::vector<bool> front = pareto_front(r);
  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tandem search: " +
                  escape(title) + "</title>\n<style>\n" + css() + "\n</style>\n</head>\n<body>\n";
  s += "<h1>tandem search: " + escape(title) + "</h1>\n<p class=\"sub\">scenario <code>" + escape(r.scenario_path) + "</code>";
  for (const std::string& set : r.sets) s += " <code>--set " + escape(set) + "</code>";
  s += "<br><span id=\"counts\"" + attr("data-points", double(r.points)) + attr("data-valid", double(r.valid)) + ">" +
       std::to_string(r.points) + " points, " + std::to_string(r.valid) + " valid, " + std::to_string(r.out_of_memory) +
       " out of memory (of " + std::to_string(r.memory_planned) + " checked; " +
       std::to_string(r.out_of_memory_by_bound) + " over HBM by the lower bound without a plan), " + std::to_string(r.best.size()) +
       " simulated</span>.</p>\n";
  s += "<h2>Pareto front: throughput against peak memory</h2>\n" + pareto_section(r, front);
  s += "<h2>The " + std::to_string(r.best.size()) + " best</h2>\n" + table_section(r, front);
  s += "<h2>Estimate against simulation</h2>\n" + agreement_section(r);
  s += "<h2>Invalid and pruned points by rule</h2>\n" + rules_section(r);
  s += "</body>\n</html>\n";
  return s;
}

void write_search_html(const std::string& path, const SearchResult& r) { write_file_atomic(path, search_html(r)); }

}  // namespace tandem::search
