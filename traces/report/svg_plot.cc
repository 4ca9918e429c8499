#include "traces/report/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tandem::svg {
namespace {

// Coordinates with one decimal: enough at screen resolution, and it keeps the file small.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  std::string s = buf;
  if (s.size() > 2 && s.compare(s.size() - 2, 2, ".0") == 0) s.resize(s.size() - 2);
  if (s == "-0") s = "0";
  return s;
}

std::string plain(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

std::string fmt(const Format& f, double v) { return f ? f(v) : plain(v); }

std::string open_svg(int width, int height, const std::string& title) {
  std::string s = "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot\" width=\"" + std::to_string(width) +
                  "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " + std::to_string(width) + " " +
                  std::to_string(height) + "\" font-family=\"sans-serif\" font-size=\"11\">\n";
  if (!title.empty())
    s += "<text x=\"4\" y=\"15\" font-size=\"13\" font-weight=\"bold\">" + escape(title) + "</text>\n";
  return s;
}

std::string text(double x, double y, const std::string& body, const char* anchor = "start", const char* extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" + anchor + "\"" + extra + ">" +
         escape(body) + "</text>\n";
}

std::string line(double x0, double y0, double x1, double y1, const char* stroke) {
  return "<line x1=\"" + num(x0) + "\" y1=\"" + num(y0) + "\" x2=\"" + num(x1) + "\" y2=\"" + num(y1) +
         "\" stroke=\"" + stroke + "\"/>\n";
}

// Ticks and grid of a horizontal axis at y = `axis_y` spanning plot x in [left, right].
std::string x_axis(double lo, double hi, double left, double right, double top, double axis_y, const Format& f) {
  std::string s = line(left, axis_y, right, axis_y, "#444");
  const double scale = (right - left) / (hi - lo);
  for (double t : nice_ticks(lo, hi, std::max(2, int((right - left) / 110)))) {
    const double x = left + (t - lo) * scale;
    s += line(x, top, x, axis_y, "#e4e4e4");
    s += line(x, axis_y, x, axis_y + 4, "#444");
    s += text(x, axis_y + 15, fmt(f, t), "middle");
  }
  return s;
}

}  // namespace

std::string escape(std::string_view in) {
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&#39;"; break;
      default: out += c;
    }
  }
  return out;
}

std::vector<double> nice_ticks(double lo, double hi, int target) {
  std::vector<double> ticks;
  if (!(hi > lo) || !std::isfinite(lo) || !std::isfinite(hi) || target < 1) return ticks;
  // step = m * 10^e; a tick k * step is computed as an integer times or over a power of ten, so
  // that it is the double nearest the decimal (0.03, not 0.030000000000000002).
  const double raw = (hi - lo) / target;
  const int e = int(std::floor(std::log10(raw)));
  const double mag = std::pow(10.0, e);
  double m = 10;
  for (double c : {1.0, 2.0, 5.0})
    if (raw <= c * mag * (1 + 1e-12)) {
      m = c;
      break;
    }
  const double p = std::pow(10.0, std::abs(e));
  auto tick = [&](double k) { return e < 0 ? k * m / p : k * m * p; };
  const double step = m * mag;
  for (double k = std::ceil(lo / step - 1e-9); tick(k) <= hi + step * 1e-9; k += 1) ticks.push_back(tick(k) + 0.0);
  return ticks;
}

Series downsample(const Series& s, double x_lo, double x_hi, int columns) {
  if (columns < 1 || s.x.size() <= size_t(4 * columns) || !(x_hi > x_lo)) return s;
  Series out = s;
  out.x.clear();
  out.y.clear();
  const double width = (x_hi - x_lo) / columns;
  size_t i = 0;
  const size_t n = s.x.size();
  while (i < n) {
    const long col = std::lround(std::floor((s.x[i] - x_lo) / width));
    size_t j = i, lo = i, hi = i;
    while (j < n && std::lround(std::floor((s.x[j] - x_lo) / width)) == col) {
      if (s.y[j] < s.y[lo]) lo = j;
      if (s.y[j] > s.y[hi]) hi = j;
      ++j;
    }
    size_t keep[4] = {i, std::min(lo, hi), std::max(lo, hi), j - 1};
    size_t last = size_t(-1);
    for (size_t k : keep) {
      if (k == last) continue;
      out.x.push_back(s.x[k]);
      out.y.push_back(s.y[k]);
      last = k;
    }
    i = j;
  }
  return out;
}

std::string line_plot(const LinePlot& spec, const std::vector<Series>& series) {
  const double left = 90, right = spec.width - 20.0, top = 36, bottom = spec.height - 38.0;
  double x_lo = INFINITY, x_hi = -INFINITY, y_lo = INFINITY, y_hi = -INFINITY;
  for (const Series& s : series)
    for (size_t i = 0; i < s.x.size(); ++i) {
      x_lo = std::min(x_lo, s.x[i]);
      x_hi = std::max(x_hi, s.x[i]);
      y_lo = std::min(y_lo, s.y[i]);
      y_hi = std::max(y_hi, s.y[i]);
    }
  if (!std::isfinite(x_lo)) x_lo = 0, x_hi = 1, y_lo = 0, y_hi = 1;
  if (spec.y_from_zero) y_lo = std::min(0.0, y_lo);
  if (!(x_hi > x_lo)) x_hi = x_lo + 1;
  if (!(y_hi > y_lo)) y_hi = y_lo + 1;
  y_hi += (y_hi - y_lo) * 0.05;
  const double sx = (right - left) / (x_hi - x_lo), sy = (bottom - top) / (y_hi - y_lo);

  std::string s = open_svg(spec.width, spec.height, spec.title);
  for (double t : nice_ticks(y_lo, y_hi, 5)) {
    const double y = bottom - (t - y_lo) * sy;
    s += line(left, y, right, y, "#e4e4e4");
    s += text(left - 6, y + 4, fmt(spec.y_format, t), "end");
  }
  s += line(left, top, left, bottom, "#444");
  s += x_axis(x_lo, x_hi, left, right, top, bottom, spec.x_format);
  if (!spec.x_label.empty()) s += text((left + right) / 2, spec.height - 6.0, spec.x_label, "middle");
  if (!spec.y_label.empty()) s += text(4, top - 8, spec.y_label);

  double legend_x = right;
  for (auto it = series.rbegin(); it != series.rend(); ++it) {
    legend_x -= 14 + 7.0 * double(it->name.size()) + 24;
    s += "<line x1=\"" + num(legend_x) + "\" y1=\"12\" x2=\"" + num(legend_x + 18) + "\" y2=\"12\" stroke=\"" +
         escape(it->color) + "\" stroke-width=\"2\"" + (it->dashed ? " stroke-dasharray=\"5,3\"" : "") + "/>\n";
    s += text(legend_x + 22, 16, it->name);
  }

  for (const Series& raw : series) {
    const Series d = downsample(raw, x_lo, x_hi, int(right - left));
    if (d.x.empty()) continue;
    std::string points;
    auto add = [&](double x, double y) {
      if (!points.empty()) points += ' ';
      points += num(left + (x - x_lo) * sx) + "," + num(bottom - (y - y_lo) * sy);
    };
    for (size_t i = 0; i < d.x.size(); ++i) {
      if (d.step && i > 0) add(d.x[i], d.y[i - 1]);
      add(d.x[i], d.y[i]);
    }
    if (d.line)
      s += "<polyline fill=\"none\" stroke=\"" + escape(d.color) + "\" stroke-width=\"1.5\"" +
           (d.dashed ? " stroke-dasharray=\"5,3\"" : "") + " points=\"" + points + "\"><title>" + escape(d.name) +
           "</title></polyline>\n";
    if (d.markers)
      for (size_t i = 0; i < d.x.size(); ++i)
        s += "<circle cx=\"" + num(left + (d.x[i] - x_lo) * sx) + "\" cy=\"" + num(bottom - (d.y[i] - y_lo) * sy) +
             "\" r=\"3.5\" fill=\"" + escape(d.color) + "\"><title>" +
             escape(d.labels.size() == d.x.size() ? d.labels[i] : d.name) + "</title></circle>\n";
  }
  s += "</svg>\n";
  return s;
}

std::string bar_plot(const BarPlot& spec, const std::vector<Bar>& bars) {
  const double left = 300, right = spec.width - 90.0, top = 40, bar_h = 9, group_h = 2 * bar_h + 8;
  const int height = int(top + group_h * double(bars.size()) + 30);
  double hi = 0;
  for (const Bar& b : bars) hi = std::max({hi, b.a, b.b});
  if (!(hi > 0)) hi = 1;
  const double scale = (right - left) / hi;

  std::string s = open_svg(spec.width, height, spec.title);
  s += "<rect x=\"" + num(right - 160) + "\" y=\"6\" width=\"10\" height=\"10\" fill=\"" + escape(spec.color_a) + "\"/>";
  s += text(right - 146, 15, spec.name_a);
  s += "<rect x=\"" + num(right - 70) + "\" y=\"6\" width=\"10\" height=\"10\" fill=\"" + escape(spec.color_b) + "\"/>";
  s += text(right - 56, 15, spec.name_b);
  const double axis_y = top + group_h * double(bars.size());
  s += x_axis(0, hi, left, right, top - 6, axis_y, spec.value_format);
  for (size_t i = 0; i < bars.size(); ++i) {
    const Bar& b = bars[i];
    const double y = top + group_h * double(i);
    std::string label = b.label.size() > 44 ? b.label.substr(0, 43) + "\u2026" : b.label;
    s += "<text x=\"" + num(left - 6) + "\" y=\"" + num(y + bar_h + 3) + "\" text-anchor=\"end\"><title>" +
         escape(b.label) + "</title>" + escape(label) + "</text>\n";
    s += "<rect x=\"" + num(left) + "\" y=\"" + num(y) + "\" width=\"" + num(std::max(0.5, b.a * scale)) +
         "\" height=\"" + num(bar_h) + "\" fill=\"" + escape(spec.color_a) + "\"><title>" + escape(spec.name_a) + " " +
         escape(fmt(spec.value_format, b.a)) + "</title></rect>\n";
    s += "<rect x=\"" + num(left) + "\" y=\"" + num(y + bar_h) + "\" width=\"" + num(std::max(0.5, b.b * scale)) +
         "\" height=\"" + num(bar_h) + "\" fill=\"" + escape(spec.color_b) + "\"><title>" + escape(spec.name_b) + " " +
         escape(fmt(spec.value_format, b.b)) + "</title></rect>\n";
    if (!b.note.empty()) s += text(right + 6, y + bar_h + 3, b.note);
  }
  s += "</svg>\n";
  return s;
}

std::string timeline(const Timeline& spec, const std::vector<Lane>& lanes) {
  const double left = 140, right = spec.width - 20.0, top = 44, row = spec.lane_height + 3.0;
  const double bottom = top + row * double(lanes.size());
  const int height = int(bottom + 32);
  const double t0 = spec.t0, t1 = spec.t1 > spec.t0 ? spec.t1 : spec.t0 + 1;
  const double scale = (right - left) / (t1 - t0);
  const size_t colors = std::max<size_t>(1, spec.palette.size());

  struct Rect {
    double x0, x1, busy;
    int count;
    const Span* first;
    int color;
  };
  auto merge = [&](double gap, std::vector<std::vector<Rect>>& out) {
    size_t total = 0;
    out.assign(lanes.size(), {});
    std::vector<double> weight(colors);
    for (size_t l = 0; l < lanes.size(); ++l) {
      std::vector<Rect>& rects = out[l];
      auto close = [&] {
        if (rects.empty()) return;
        rects.back().color = int(std::max_element(weight.begin(), weight.end()) - weight.begin());
        std::fill(weight.begin(), weight.end(), 0.0);
      };
      for (const Span& sp : lanes[l].spans) {
        if (!(sp.end > sp.start)) continue;
        const double x0 = (sp.start - t0) * scale, x1 = (sp.end - t0) * scale;
        if (!rects.empty() && x0 - rects.back().x1 < gap) {
          Rect& r = rects.back();
          r.x1 = std::max(r.x1, x1);
          r.busy += x1 - x0;
          ++r.count;
        } else {
          close();
          rects.push_back({x0, x1, x1 - x0, 1, &sp, 0});
        }
        weight[size_t(sp.color) % colors] += x1 - x0;
      }
      close();
      total += rects.size();
    }
    return total;
  };
  std::vector<std::vector<Rect>> rects;
  for (double gap = 0.5;; gap *= 2)
    if (merge(gap, rects) <= spec.max_rects || gap > right - left) break;

  std::string s = open_svg(spec.width, height, spec.title);
  double lx = left;
  for (size_t c = 0; c < spec.palette.size() && c < spec.legend.size(); ++c) {
    if (spec.legend[c].empty()) continue;
    s += "<rect x=\"" + num(lx) + "\" y=\"22\" width=\"10\" height=\"10\" fill=\"" + escape(spec.palette[c]) + "\"/>";
    s += text(lx + 14, 31, spec.legend[c]);
    lx += 30 + 7.0 * double(spec.legend[c].size());
  }
  s += x_axis(t0, t1, left, right, top, bottom, spec.t_format);
  for (size_t l = 0; l < lanes.size(); ++l) {
    const double y = top + row * double(l);
    if (lanes[l].group_start && l > 0) s += line(4, y - 1.5, right, y - 1.5, "#bbb");
    s += text(left - 6, y + spec.lane_height - 4.0, lanes[l].name, "end");
    s += "<g>\n";
    for (const Rect& r : rects[l]) {
      const double w = std::max(1.0, r.x1 - r.x0);
      const double density = r.count > 1 ? std::clamp(r.busy / w, 0.35, 1.0) : 1.0;
      s += "<rect x=\"" + num(left + r.x0) + "\" y=\"" + num(y) + "\" width=\"" + num(w) + "\" height=\"" +
           std::to_string(spec.lane_height) + "\" fill=\"" + escape(spec.palette.empty() ? "#888" : spec.palette[size_t(r.color)]) +
           "\"" + (density < 1 ? " fill-opacity=\"" + num(density) + "\"" : std::string()) + "><title>";
      if (r.count == 1) {
        if (lanes[l].title) s += escape(lanes[l].title(r.first->item));
      } else {
        s += std::to_string(r.count) + " tasks from " + escape(fmt(spec.t_format, t0 + r.x0 / scale)) + " to " +
             escape(fmt(spec.t_format, t0 + r.x1 / scale)) + ", busy " +
             std::to_string(int(std::lround(100 * std::min(1.0, r.busy / std::max(r.x1 - r.x0, 1e-12))))) + "%";
      }
      s += "</title></rect>\n";
    }
    s += "</g>\n";
  }
  s += "</svg>\n";
  return s;
}

}  // namespace tandem::svg
