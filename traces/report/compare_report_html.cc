#include "traces/report/compare_report_html.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <set>

#include "shared/schedule.h"
#include "traces/atomic_file.h"
#include "traces/report/svg_plot.h"
#include "traces/task_label.h"

namespace tandem {
namespace {

using svg::escape;

// Colour classes of the timeline, by the kind of a label.
const std::vector<std::string> kPalette = {"#4e79a7", "#b07aa1", "#76b7b2", "#f28e2b", "#59a14f", "#9c755f", "#bab0ac"};
const std::vector<std::string> kLegend = {"gemm", "attention", "other compute", "collective", "send/recv", "copy", ""};

int color_class(std::string_view kind) {
  static const std::set<std::string_view> kCollectives = {"all-reduce", "all-gather", "reduce-scatter",
                                                          "all-to-all", "broadcast",  "reduce"};
  if (kind == "gemm") return 0;
  if (kind.substr(0, 9) == "attention") return 1;
  if (kCollectives.count(kind)) return 3;
  if (kind == "send" || kind == "recv") return 4;
  if (kind == "h2d" || kind == "d2h" || kind == "d2d") return 5;
  if (kind == "alloc" || kind == "free" || kind == "?") return 6;
  return 2;
}

const char* css() {
  return R"(body{font-family:system-ui,-apple-system,"Segoe UI",sans-serif;margin:24px auto;max-width:1000px;color:#222;padding:0 12px}
h1{font-size:22px;margin-bottom:4px}h2{font-size:17px;margin-top:32px;border-bottom:1px solid #ddd;padding-bottom:4px}
.sub{color:#555;font-size:13px}table{border-collapse:collapse;font-size:13px;margin:8px 0}
th,td{padding:3px 8px;border-bottom:1px solid #eee;text-align:left}th{background:#f4f4f4}
td.n,th.n{text-align:right;font-variant-numeric:tabular-nums}
.headline{display:flex;gap:28px;align-items:baseline;background:#f7f7fa;border:1px solid #dde;border-radius:6px;padding:14px 18px;margin:16px 0}
.headline .v{font-size:26px;font-weight:600}.headline .k{font-size:12px;color:#666}
.good{color:#2a7d2a}.fair{color:#b36b00}.bad{color:#c0392b}.note{color:#666;font-size:12px}
svg.plot{display:block;margin:8px 0;max-width:100%;height:auto}code{font-size:12px})";
}

std::string error_class(double e) {
  if (!std::isfinite(e)) return "";
  const double m = std::fabs(e);
  return m < 0.05 ? "good" : m < 0.2 ? "fair" : "bad";
}

std::string err_cell(double e) {
  return "<td class=\"n " + error_class(e) + "\">" + escape(format_error(e)) + "</td>";
}
std::string num_cell(const std::string& s) { return "<td class=\"n\">" + escape(s) + "</td>"; }

const proto::Rank* find_rank(const proto::Trace& t, int rank) {
  for (const proto::Rank& r : t.ranks())
    if (r.rank() == rank) return &r;
  return nullptr;
}

std::string label_table(const std::vector<LabelComparison>& rows, bool with_label, size_t limit) {
  std::string s = "<table><tr>";
  s += with_label ? "<th>label</th>" : "<th>kind</th>";
  s += "<th class=\"n\">count</th><th class=\"n\">total A</th><th class=\"n\">total B</th><th class=\"n\">total "
       "error</th><th class=\"n\">median error</th><th class=\"n\">worst error</th><th class=\"n\">contribution "
       "per rank</th></tr>\n";
  size_t shown = 0;
  for (const LabelComparison& l : rows) {
    if (shown == limit) break;
    if (l.total.a_s == 0 && l.total.b_s == 0) continue;  // alloc/free: nothing to compare
    ++shown;
    s += "<tr><td>" + escape(with_label ? l.label : l.kind) + "</td>" + num_cell(std::to_string(l.count)) +
         num_cell(format_seconds(l.total.a_s)) + num_cell(format_seconds(l.total.b_s)) + err_cell(l.total.error()) +
         err_cell(l.median_error) + err_cell(l.worst_error) + num_cell(format_seconds(l.contribution_s)) + "</tr>\n";
  }
  s += "</table>\n";
  return s;
}

std::string timeline_section(const Comparison& c, const proto::Trace& a, const proto::Trace& b) {
  const proto::Rank* ra = find_rank(a, c.slowest_rank);
  const proto::Rank* rb = find_rank(b, c.slowest_rank);
  if (!ra && !rb) return "<p class=\"note\">No events.</p>\n";
  double t0 = INFINITY, t1 = -INFINITY;
  bool used[kStreamCount] = {};
  for (const proto::Rank* r : {ra, rb}) {
    if (!r) continue;
    const proto::Events& e = r->events();
    for (int i = 0; i < e.task_id_size(); ++i) {
      t0 = std::min(t0, e.start_s(i));
      t1 = std::max(t1, e.end_s(i));
      if (e.end_s(i) > e.start_s(i)) used[e.stream(i)] = true;
    }
  }
  if (!std::isfinite(t0)) return "<p class=\"note\">No events.</p>\n";
  // A span per event, its colour from its label's kind (computed once a label, not once an event);
  // its tooltip text is made only for the rectangles drawn.
  auto lane = [](const std::string& name, const proto::Trace& t, const proto::Rank* r, int stream, bool first) {
    svg::Lane out{name, {}, first, {}};
    if (!r) return out;
    const proto::Events& e = r->events();
    std::vector<int> colors(size_t(t.labels_size()), -1);
    for (int i = 0; i < e.task_id_size(); ++i) {
      if (int(e.stream(i)) != stream) continue;
      int& color = colors[e.label(i)];
      if (color < 0) color = color_class(label_kind(t.labels(int(e.label(i)))));
      out.spans.push_back({e.start_s(i), e.end_s(i), color, i});
    }
    std::sort(out.spans.begin(), out.spans.end(), [](const svg::Span& x, const svg::Span& y) { return x.start < y.start; });
    out.title = [&t, &e](int64_t item) {
      const int i = int(item);
      return t.labels(int(e.label(i))) + " — " + format_seconds(e.end_s(i) - e.start_s(i)) + " (task " +
             std::to_string(e.task_id(i)) + ")";
    };
    return out;
  };
  std::vector<svg::Lane> lanes;
  for (int s = 0; s < kStreamCount; ++s) {
    if (!used[s]) continue;
    const std::string name = to_string(static_cast<Stream>(s));
    lanes.push_back(lane(name + " · A", a, ra, s, true));
    lanes.push_back(lane(name + " · B", b, rb, s, false));
  }
  svg::Timeline spec;
  spec.title = "Rank " + std::to_string(c.slowest_rank) + ": A above B on each stream";
  spec.t0 = t0;
  spec.t1 = t1;
  spec.palette = kPalette;
  spec.legend = kLegend;
  spec.max_rects = kMaxTimelineRects;
  spec.t_format = [](double v) { return format_seconds(v); };
  return svg::timeline(spec, lanes);
}

std::string memory_section(const Comparison& c, const proto::Trace& a, const proto::Trace& b) {
  std::vector<svg::Series> series;
  bool host = false;
  auto add = [&](const proto::Rank* r, const std::string& name, const std::string& color) {
    if (!r || r->memory().time_s_size() == 0) return;
    const proto::MemorySamples& m = r->memory();
    svg::Series d{name + " device", color, {}, {}, true, false};
    svg::Series h{name + " host", color, {}, {}, true, true};
    for (int i = 0; i < m.time_s_size(); ++i) {
      d.x.push_back(m.time_s(i));
      d.y.push_back(double(m.device_bytes(i)));
      h.x.push_back(m.time_s(i));
      h.y.push_back(double(m.host_bytes(i)));
      host = host || m.host_bytes(i) != 0;
    }
    series.push_back(std::move(d));
    series.push_back(std::move(h));
  };
  add(find_rank(a, c.peak_memory_rank), "A", "#4e79a7");
  add(find_rank(b, c.peak_memory_rank), "B", "#f28e2b");
  if (series.empty()) return "<p class=\"note\">Neither trace recorded memory.</p>\n";
  if (!host) {
    std::vector<svg::Series> device;
    for (svg::Series& s : series)
      if (!s.dashed) device.push_back(std::move(s));
    series = std::move(device);
  }
  // Plot in the binary unit of the largest value, so that ticks fall on round KiB/MiB/GiB.
  double top = 0;
  for (const svg::Series& s : series)
    for (double y : s.y) top = std::max(top, y);
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  while (unit < 4 && top >= 1024.0 * double(int64_t(1) << (10 * unit))) ++unit;
  const double scale = double(int64_t(1) << (10 * unit));
  for (svg::Series& s : series)
    for (double& y : s.y) y /= scale;
  svg::LinePlot spec;
  spec.title = "Rank " + std::to_string(c.peak_memory_rank) + ": memory in use" + (host ? " (dashed: host)" : "");
  spec.x_label = "time";
  spec.x_format = [](double v) { return format_seconds(v); };
  spec.y_format = [unit](double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g %s", v, kUnits[unit]);
    return std::string(buf);
  };
  return svg::line_plot(spec, series);
}

std::string rank_section(const Comparison& c) {
  std::string s;
  if (c.ranks.size() > 1) {
    svg::Series sa{"A", "#4e79a7", {}, {}, false, false}, sb{"B", "#f28e2b", {}, {}, false, false};
    for (const RankComparison& r : c.ranks) {
      if (r.in_a) sa.x.push_back(r.rank), sa.y.push_back(r.iteration.a_s);
      if (r.in_b) sb.x.push_back(r.rank), sb.y.push_back(r.iteration.b_s);
    }
    svg::LinePlot spec;
    spec.title = "Iteration time per rank";
    spec.x_label = "rank";
    spec.height = 220;
    spec.x_format = [](double v) { return v == std::floor(v) ? std::to_string(std::lround(v)) : std::string(); };
    spec.y_format = [](double v) { return format_seconds(v); };
    s += svg::line_plot(spec, {sa, sb});
  }
  std::vector<const RankComparison*> rows;
  for (const RankComparison& r : c.ranks) rows.push_back(&r);
  if (rows.size() > kMaxRankRows) {
    std::stable_sort(rows.begin(), rows.end(), [](const RankComparison* x, const RankComparison* y) {
      const double ex = x->iteration.error(), ey = y->iteration.error();
      const double mx = std::isfinite(ex) ? std::fabs(ex) : INFINITY, my = std::isfinite(ey) ? std::fabs(ey) : INFINITY;
      return mx > my;
    });
    rows.resize(kMaxRankRows);
    std::sort(rows.begin(), rows.end(), [](auto* x, auto* y) { return x->rank < y->rank; });
    s += "<p class=\"note\">The " + std::to_string(kMaxRankRows) + " ranks of largest |error| out of " +
         std::to_string(c.ranks.size()) + "; every rank is in <code>--json</code>.</p>\n";
  }
  s += "<table><tr><th>rank</th><th class=\"n\">iteration A</th><th class=\"n\">iteration B</th><th "
       "class=\"n\">error</th><th class=\"n\">peak device A</th><th class=\"n\">peak device B</th><th>busiest "
       "stream (B)</th></tr>\n";
  for (const RankComparison* r : rows) {
    const StreamTimes* busiest = nullptr;
    for (const StreamTimes& st : r->streams)
      if (!busiest || st.busy.b_s > busiest->busy.b_s) busiest = &st;
    s += "<tr><td>" + std::to_string(r->rank) + (r->in_a ? "" : " (B only)") + (r->in_b ? "" : " (A only)") +
         "</td>" + num_cell(format_seconds(r->iteration.a_s)) + num_cell(format_seconds(r->iteration.b_s)) +
         err_cell(r->iteration.error()) + num_cell(format_bytes(r->peak_device_a_bytes)) +
         num_cell(format_bytes(r->peak_device_b_bytes)) + "<td>" +
         (busiest ? escape(std::string(to_string(static_cast<Stream>(busiest->stream))) + " " +
                           format_seconds(busiest->busy.b_s) + " (" + format_error(busiest->busy.error()) + ")")
                  : std::string()) +
         "</td></tr>\n";
  }
  s += "</table>\n";
  return s;
}

}  // namespace

std::string comparison_html(const Comparison& c, const proto::Trace& a, const proto::Trace& b) {
  std::string s;
  s.reserve(1 << 16);
  s += "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<title>tandem compare: " +
       escape(c.a.scenario) + "</title>\n<style>\n" + css() + "\n</style>\n</head>\n<body>\n";
  s += "<h1>tandem compare: " + escape(c.a.scenario) + "</h1>\n";
  s += "<p class=\"sub\"><b>A</b> = " + escape(c.a.name) + " (" + escape(c.a.backend) + ", " + escape(c.a.machine) +
       ")<br><b>B</b> = " + escape(c.b.name) + " (" + escape(c.b.backend) + ", " + escape(c.b.machine) +
       ") — the reference<br>scenario digest " + escape(c.a.digest) +
       (c.same_scenario ? "" : " <b class=\"bad\">differs from B's " + escape(c.b.digest) + "</b>") + "</p>\n";

  s += "<div class=\"headline\" id=\"headline\">";
  s += "<div><div class=\"k\">iteration time A</div><div class=\"v\" id=\"iteration-a\">" +
       escape(format_seconds(c.iteration.a_s)) + "</div></div>";
  s += "<div><div class=\"k\">iteration time B</div><div class=\"v\" id=\"iteration-b\">" +
       escape(format_seconds(c.iteration.b_s)) + "</div></div>";
  s += "<div><div class=\"k\">error (A&minus;B)/B</div><div class=\"v " + error_class(c.iteration.error()) +
       "\" id=\"iteration-error\">" + escape(format_error(c.iteration.error())) + "</div></div>";
  if (c.a.has_interval) {
    const bool inside = b_in_a_interval(c) == 1;
    s += "<div><div class=\"k\">prediction interval of A</div><div class=\"v\" id=\"interval-a\">" +
         escape(format_seconds(c.a.interval_low_s)) + " &ndash; " + escape(format_seconds(c.a.interval_high_s)) +
         "</div><div class=\"" + (inside ? "good" : "bad") + "\" id=\"interval-verdict\">B " +
         (inside ? "inside" : "outside") + "</div>" +
         (c.a.has_evidence ? "<div class=\"note\" id=\"interval-evidence\">evidence " +
                                 escape(interval_evidence_text(c.a.evidence)) + "</div>"
                           : std::string()) +
         "</div>";
  }
  if (c.spread_b.steps > 0) {
    char spread[160];
    std::snprintf(spread, sizeof spread, "IQR %.1f%% of the median over %d steps<br>min %s, max %s",
                  100 * c.spread_b.relative_iqr(), c.spread_b.steps, format_seconds(c.spread_b.min_s).c_str(),
                  format_seconds(c.spread_b.max_s).c_str());
    s += "<div><div class=\"k\">measured spread of B</div><div id=\"spread-b\">" + escape(spread) + "</div></div>";
  }
  s += "<div><div class=\"k\">events</div><div>" + std::to_string(c.matched) + " matched<br>" +
       std::to_string(c.only_a) + " only in A, " + std::to_string(c.only_b) + " only in B</div></div>";
  s += "</div>\n";
  s += "<p class=\"note\">Iteration time of a trace: the largest over its ranks of last event end minus first event "
       "start. Errors are (A&minus;B)/B: negative when A is faster. A predicted trace carries the prediction interval "
       "of its iteration time (from each cost component's residuals on the reference data, docs/sim.md): whether "
       "B's iteration time lies in it is shown beside it.</p>\n";
  if (c.label_mismatches > 0)
    s += "<p class=\"bad\">" + std::to_string(c.label_mismatches) +
         " matched events carry different labels in A and B (A's label is used).</p>\n";
  if (!c.unmatched.empty()) {
    s += "<details><summary>Tasks in one trace only (first " + std::to_string(c.unmatched.size()) +
         ")</summary><table><tr><th>rank</th><th>task</th><th>label</th><th>in</th></tr>\n";
    for (const UnmatchedTask& u : c.unmatched)
      s += "<tr><td>" + std::to_string(u.rank) + "</td><td>" + std::to_string(u.task_id) + "</td><td>" +
           escape(u.label) + "</td><td>" + (u.in_a ? "A" : "B") + "</td></tr>\n";
    s += "</table></details>\n";
  }

  s += "<h2>Streams</h2>\n<p class=\"note\">Busy time: the sum of event durations on the stream, over all "
       "ranks.</p>\n<table><tr><th>stream</th><th class=\"n\">busy A</th><th class=\"n\">busy B</th><th "
       "class=\"n\">error</th><th class=\"n\">events A</th><th class=\"n\">events B</th></tr>\n";
  for (const StreamTimes& st : c.streams)
    s += "<tr><td>" + escape(to_string(static_cast<Stream>(st.stream))) + "</td>" +
         num_cell(format_seconds(st.busy.a_s)) + num_cell(format_seconds(st.busy.b_s)) + err_cell(st.busy.error()) +
         num_cell(std::to_string(st.events_a)) + num_cell(std::to_string(st.events_b)) + "</tr>\n";
  s += "</table>\n";

  s += "<h2>Ranks</h2>\n" + rank_section(c);

  s += "<h2>Task kinds</h2>\n<p class=\"note\">Matched events only. Contribution per rank = (sum A &minus; sum B) / "
       "ranks compared: the time the kind adds to A on an average rank, counted as if it were all on the critical "
       "path (overlapped work is overstated). Median and worst: per-event errors, events with a zero B time left "
       "out.</p>\n";
  s += label_table(c.kinds, false, c.kinds.size());
  std::vector<svg::Bar> bars;
  for (const LabelComparison& l : c.labels) {
    if (bars.size() == 15) break;
    if (l.total.a_s == 0 && l.total.b_s == 0) continue;
    bars.push_back({l.label, l.total.a_s, l.total.b_s, format_error(l.total.error())});
  }
  if (!bars.empty()) {
    svg::BarPlot spec;
    spec.title = "Labels contributing most: total time over all ranks";
    spec.name_a = "A";
    spec.name_b = "B";
    spec.value_format = [](double v) { return format_seconds(v); };
    s += svg::bar_plot(spec, bars);
  }
  s += "<h3>By label</h3>\n";
  if (c.labels.size() > kMaxLabelRows)
    s += "<p class=\"note\">The " + std::to_string(kMaxLabelRows) + " labels contributing most out of " +
         std::to_string(c.labels.size()) + "; every label is in <code>--json</code>.</p>\n";
  s += label_table(c.labels, true, kMaxLabelRows);

  s += "<h2>Timeline of the slowest rank</h2>\n<p class=\"note\">Rank " + std::to_string(c.slowest_rank) +
       " (the largest iteration time in B). Tasks closer than a pixel or two are merged into one rectangle, "
       "coloured by the kind that fills most of it and paler when it is partly idle; hover for details.</p>\n";
  s += timeline_section(c, a, b);
  s += "<h2>Memory of the peak rank</h2>\n";
  s += memory_section(c, a, b);
  s += "<p class=\"note\">Generated by tandem compare. Numbers for every rank and label: <code>tandem compare A B "
       "--json</code>.</p>\n</body>\n</html>\n";
  return s;
}

void write_comparison_html(const std::string& path, const Comparison& c, const proto::Trace& a,
                           const proto::Trace& b) {
  write_file_atomic(path, comparison_html(c, a, b));
}

}  // namespace tandem
