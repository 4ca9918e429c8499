#include "sim/sweep/sweep_report_html.h"

#include <cmath>
#include <map>

#include "shared/number_format.h"
#include "sim/prediction_interval.h"
#include "traces/atomic_file.h"
#include "traces/report/svg_plot.h"

namespace tandem::sweep {

namespace {

using svg::escape;

const std::vector<std::string> kColors = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                          "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};

// A missing figure (NaN) is an empty cell.
std::string fmt(const char* f, double v) { return std::isfinite(v) ? format_number(f, v) : ""; }

std::string tokens_text(double v) { return v >= 100 ? fmt("%.0f", v) : fmt("%.3g", v); }

const char* css() {
  return R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1300px;color:#222;padding:0 12px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;font-size:13px}table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left;vertical-align:top}th{background:#f4f4f4}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}h3{font-size:14px;margin:18px 0 2px}
.legend{font-size:12px;margin:4px 0}.key{margin-right:14px;white-space:nowrap}.swatch{display:inline-block;width:18px;height:3px;vertical-align:middle;margin-right:4px}
tr.best td{background:#eef7ee}.invalid{color:#b36b00}.oom,.error{color:#c0392b}.reason{font-size:12px;color:#555;min-width:300px}td.status{white-space:nowrap}
.note{color:#666;font-size:12px}svg.plot{display:block;margin:8px 0;max-width:100%;height:auto}code{font-size:12px})";
}

std::string td(const std::string& s) { return "<td class=\"n\">" + escape(s) + "</td>"; }

std::string interval_head() { return fmt("%.0f %% interval", 100 * sim::kIntervalCoverage); }

// "1.20-1.35 s": the point's prediction interval; empty when it was not simulated.
std::string interval_text(const PointResult& r) {
  if (r.status != PointStatus::kOk) return "";
  return fmt("%.4g", r.iteration_time_low_s) + "-" + fmt("%.4g s", r.iteration_time_high_s);
}

bool valid(const SweepPoint& p) { return p.result.status == PointStatus::kOk && p.result.tokens_per_s > 0; }

std::string scaling_section(const SweepTable& t) {
  std::vector<std::string> names = strategies(t);
  std::vector<svg::Series> throughput, efficiency;
  std::string legend;
  for (size_t s = 0; s < names.size(); ++s) {
    std::map<int, const SweepPoint*> by_size;
    for (const SweepPoint& p : t.points)
      if (p.strategy == names[s] && valid(p) && p.gpus > 0) by_size.emplace(p.gpus, &p);
    if (by_size.empty()) continue;
    // Short series names ("S3"): the plot draws its legend in one row; the HTML legend below
    // gives each its strategy.
    std::string name = std::to_string(s + 1);
    name.insert(name.begin(), 'S');  // not "S" + ...: GCC 12's false -Wrestrict (bug 105329)
    svg::Series a{std::move(name), kColors[s % kColors.size()], {}, {}};
    svg::Series b = a;
    for (const auto& [gpus, p] : by_size) {
      a.x.push_back(std::log2(double(gpus)));
      a.y.push_back(p->result.tokens_per_s);
      b.x.push_back(std::log2(double(gpus)));
      b.y.push_back(100.0 * p->scaling_efficiency);
    }
    legend += "<span class=\"key\"><span class=\"swatch\" style=\"background:" + a.color + "\"></span>" + escape(a.name) +
              " " + escape(names[s]) + "</span>\n";
    throughput.push_back(std::move(a));
    efficiency.push_back(std::move(b));
  }
  if (throughput.empty()) return "<p class=\"note\">No valid point to plot.</p>\n";
  legend = "<p class=\"legend\">" + legend + "</p>\n";
  const svg::Format x_format = [](double v) {
    return std::fabs(v - std::round(v)) < 1e-9 ? std::to_string(std::lround(std::exp2(std::round(v)))) : std::string();
  };
  auto plot = [&](std::string y_label, const std::vector<svg::Series>& series) {
    svg::LinePlot spec;
    spec.x_label = std::string("GPUs (log scale)");
    spec.y_label = std::move(y_label);
    spec.x_format = x_format;
    return svg::line_plot(spec, series);
  };
  std::string s = "<h3>Throughput against GPUs</h3>\n" + legend + plot(std::string("tokens/s"), throughput);
  s += "<h3>Scaling efficiency against GPUs</h3>\n<p class=\"note\">tokens/s per GPU relative to the same strategy "
       "at its smallest valid size.</p>\n" +
       legend + plot(std::string("efficiency (%)"), efficiency);
  return s;
}

std::string strategy_bars(const SweepTable& t) {
  double best = 0;
  for (const SweepPoint& p : t.points)
    if (valid(p)) best = std::max(best, p.result.tokens_per_s);
  std::vector<svg::Bar> bars;
  for (const SweepPoint& p : t.points) {
    if (!valid(p)) continue;
    bars.push_back({p.strategy, 100.0 * p.result.tokens_per_s / best, 100.0 * p.result.mfu, tokens_text(p.result.tokens_per_s) + " tok/s"});
  }
  if (bars.empty()) return "<p class=\"note\">No valid point to plot.</p>\n";
  svg::BarPlot spec;
  spec.title = "tokens/s (% of the best) and MFU (%) per strategy";
  spec.name_a = "tokens/s %";
  spec.name_b = "MFU %";
  spec.value_format = [](double v) { return fmt("%.3g", v); };
  return svg::bar_plot(spec, bars);
}

}  // namespace

std::string sweep_html(const SweepTable& t) {
  const std::string title = t.scenario_name.empty() ? t.scenario_path : t.scenario_name;
  size_t counts[4] = {0, 0, 0, 0};
  for (const SweepPoint& p : t.points) ++counts[size_t(p.result.status)];
  const std::vector<BestAtSize> best = best_per_size(t);
  std::vector<bool> is_best(t.points.size(), false);
  for (const BestAtSize& b : best)
    if (b.point >= 0) is_best[size_t(b.point)] = true;

  std::string s = "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tandem sweep: " +
                  escape(title) + "</title>\n<style>\n" + css() + "\n</style>\n</head>\n<body>\n";
  s += "<h1>tandem sweep: " + escape(title) + "</h1>\n<p class=\"sub\">scenario <code>" + escape(t.scenario_path) +
       "</code>";
  for (const std::string& set : t.sets) s += " <code>--set " + escape(set) + "</code>";
  for (const VaryAxis& a : t.axes) {
    std::string list;
    for (const std::string& v : a.values) list += (list.empty() ? "" : ",") + v;
    s += " <code>--vary " + escape(a.key) + "=" + escape(list) + "</code>";
  }
  s += "<br>" + std::to_string(t.points.size()) + " points: " + std::to_string(counts[0]) + " valid, " +
       std::to_string(counts[1]) + " invalid, " + std::to_string(counts[2]) + " out of memory, " +
       std::to_string(counts[3]) + " failed.</p>\n";

  s += "<h2>Best strategy per size</h2>\n<p class=\"note\">The valid point of highest tokens/s at each number of "
       "GPUs (the first in table order on a tie).</p>\n";
  s += "<table><tr><th class=\"n\">GPUs</th><th>strategy</th><th class=\"n\">tokens/s</th><th class=\"n\">iteration</th>"
       "<th class=\"n\">" + interval_head() + "</th><th class=\"n\">model TFLOP/s/GPU</th><th class=\"n\">MFU</th><th class=\"n\">point</th></tr>\n";
  for (const BestAtSize& b : best) {
    s += "<tr>" + td(std::to_string(b.gpus));
    if (b.point < 0) {
      s += "<td colspan=\"7\" class=\"invalid\">no valid point</td></tr>\n";
      continue;
    }
    const SweepPoint& p = t.points[size_t(b.point)];
    s += "<td>" + escape(p.strategy) + "</td>" + td(tokens_text(p.result.tokens_per_s)) +
         td(fmt("%.4g s", p.result.iteration_time_s)) + td(interval_text(p.result)) +
         td(fmt("%.3g", p.result.model_tflops_per_gpu)) +
         td(fmt("%.1f %%", 100.0 * p.result.mfu)) + td("#" + std::to_string(b.point)) + "</tr>\n";
  }
  s += "</table>\n";

  const bool scaling = best.size() >= 2;
  s += scaling ? "<h2>Scaling</h2>\n<p class=\"note\">One line per strategy (the values of the varied keys other "
                 "than cluster.gpus); valid points only. The global batch is the scenario's at every size "
                 "(strong scaling); data parallelism is derived from the GPUs.</p>\n" + scaling_section(t)
               : "<h2>Strategies</h2>\n" + strategy_bars(t);

  s += "<h2>Every point</h2>\n<table><tr><th class=\"n\">#</th>";
  for (const VaryAxis& a : t.axes) s += "<th class=\"n\">" + escape(a.key) + "</th>";
  s += "<th class=\"n\">GPUs</th><th class=\"n\">dp</th><th>status</th><th class=\"n\">iteration</th>"
       "<th class=\"n\">" + interval_head() + "</th><th class=\"n\">tokens/s</th><th class=\"n\">model TFLOP/s/GPU</th><th class=\"n\">MFU</th>"
       "<th class=\"n\">peak memory</th><th class=\"n\">scaling eff.</th><th>reason</th></tr>\n";
  for (size_t i = 0; i < t.points.size(); ++i) {
    const SweepPoint& p = t.points[i];
    const PointResult& r = p.result;
    s += is_best[i] ? "<tr class=\"best\">" : "<tr>";
    s += td(std::to_string(i));
    for (const std::string& v : p.values) s += td(v);
    s += td(p.gpus > 0 ? std::to_string(p.gpus) : "") + td(r.dp > 0 ? std::to_string(r.dp) : "");
    s += "<td class=\"status " + std::string(to_string(r.status)) + "\">" + to_string(r.status) + (is_best[i] ? " (best)" : "") +
         "</td>";
    s += td(fmt("%.4g s", r.iteration_time_s)) + td(interval_text(r)) + td(tokens_text(r.tokens_per_s)) + td(fmt("%.3g", r.model_tflops_per_gpu)) +
         td(fmt("%.1f %%", 100.0 * r.mfu)) +
         td(r.peak_memory_bytes >= 0 ? fmt("%.2f GiB", double(r.peak_memory_bytes) / 1073741824.0) : "") +
         td(fmt("%.1f %%", 100.0 * p.scaling_efficiency));
    s += "<td class=\"reason\">" + escape(r.reason) + "</td></tr>\n";
  }
  s += "</table>\n<p class=\"note\">tokens/s = global batch &times; sequence length / iteration time; model TFLOP/s "
       "per GPU counts forward and backward matmul flops without recomputation; MFU = that over the GPU's dense "
       "peak for the training dtype; the iteration's interval is its prediction interval, from each cost "
       "component's residuals on the reference data (docs/sim.md); peak memory is the largest over ranks (docs/sim.md). Scaling efficiency = "
       "tokens/s per GPU over that of the same strategy at its smallest valid size.</p>\n";
  s += "</body>\n</html>\n";
  return s;
}

void write_sweep_html(const std::string& path, const SweepTable& t) { write_file_atomic(path, sweep_html(t)); }

}  // namespace tandem::sweep
