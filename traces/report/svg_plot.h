// Small inline-SVG plots for the HTML reports: a line plot (step or straight), horizontal grouped
// bars, and a timeline of lanes of rectangles. Each returns one self-contained <svg> element (no
// scripts, no external references); text is XML-escaped. Sizes are bounded whatever the input:
//  - line plots keep, per series, at most two points (the min and the max) per horizontal pixel;
//  - timelines merge the spans of a lane that fall less than `gap` pixels apart into one
//    rectangle (coloured by the colour that covers most of it, its opacity the fraction of it that
//    is busy), doubling `gap` from half a pixel until the whole plot holds at most `max_rects`
//    rectangles; spans narrower than a pixel are drawn one pixel wide.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::svg {

// Escapes & < > " ' for XML text and attribute values.
std::string escape(std::string_view text);

// Up to about `target` round tick values covering [lo, hi] (1, 2 or 5 times a power of ten).
std::vector<double> nice_ticks(double lo, double hi, int target);

using Format = std::function<std::string(double)>;

struct Series {
  std::string name, color;
  std::vector<double> x, y;  // same length, x increasing
  bool step = false;         // hold each y until the next x (memory in use)
  bool dashed = false;
  bool markers = false;      // a dot at each point (a scatter plot with line = false)
  bool line = true;          // the polyline through the points
  std::vector<std::string> labels = {};  // markers: each point's tooltip (else the series name)
};

struct LinePlot {
  std::string title, x_label, y_label;
  int width = 960, height = 280;
  Format x_format, y_format;  // tick labels; plain numbers when empty
  bool y_from_zero = true;
};
std::string line_plot(const LinePlot& spec, const std::vector<Series>& series);

// Keeps, for each of `columns` equal slices of [x_lo, x_hi], the first, min, max and last point
// of the slice, in x order: a polyline through them looks the same at that width.
Series downsample(const Series& s, double x_lo, double x_hi, int columns);

struct Bar {
  std::string label;
  double a = 0, b = 0;
  std::string note;  // drawn right of the bars ("-9.1%")
};
struct BarPlot {
  std::string title, name_a, name_b;
  std::string color_a = "#4e79a7", color_b = "#f28e2b";
  int width = 960;
  Format value_format;
};
// One pair of horizontal bars (A above B) per entry, in the given order.
std::string bar_plot(const BarPlot& spec, const std::vector<Bar>& bars);

struct Span {
  double start = 0, end = 0;
  int color = 0;     // index into Timeline::palette
  int64_t item = 0;  // what the span shows, for Lane::title
};
struct Lane {
  std::string name;
  std::vector<Span> spans;  // sorted by start
  bool group_start = false;  // draw a separator above this lane
  // The tooltip of an unmerged span, from its item. Asked only for the rectangles drawn (at most
  // Timeline::max_rects), so that a lane of many spans holds no text per span. None: no tooltip.
  std::function<std::string(int64_t item)> title;
};
struct Timeline {
  std::string title;
  int width = 960;
  int lane_height = 16;
  double t0 = 0, t1 = 1;
  std::vector<std::string> palette;
  std::vector<std::string> legend;  // one name per palette entry ("" to leave it out)
  size_t max_rects = 4000;
  Format t_format;
};
std::string timeline(const Timeline& spec, const std::vector<Lane>& lanes);

}  // namespace tandem::svg
