#include "traces/report/svg_plot.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "html_check.h"

namespace tandem::svg {
namespace {

using testing::count_of;
using testing::html_balance_problem;

TEST(SvgPlot, NiceTicks) {
  EXPECT_EQ(nice_ticks(0, 10, 5), (std::vector<double>{0, 2, 4, 6, 8, 10}));
  EXPECT_EQ(nice_ticks(0.013, 0.061, 5), (std::vector<double>{0.02, 0.03, 0.04, 0.05, 0.06}));
  EXPECT_TRUE(nice_ticks(1, 1, 5).empty());
}

TEST(SvgPlot, EscapesText) { EXPECT_EQ(escape("a<b & \"c\" 'd'>"), "a&lt;b &amp; &quot;c&quot; &#39;d&#39;&gt;"); }

// 10,000 points into 100 columns keep at most 4 a column, and the extremes.
TEST(SvgPlot, DownsampleKeepsExtremes) {
  Series s{"x", "#000", {}, {}, false, false};
  for (int i = 0; i < 10000; ++i) {
    s.x.push_back(i);
    s.y.push_back(i == 4321 ? 1e6 : i == 777 ? -5 : i % 7);
  }
  const Series d = downsample(s, 0, 9999, 100);
  EXPECT_LE(d.x.size(), 400u);
  EXPECT_EQ(*std::max_element(d.y.begin(), d.y.end()), 1e6);
  EXPECT_EQ(*std::min_element(d.y.begin(), d.y.end()), -5);
  EXPECT_TRUE(std::is_sorted(d.x.begin(), d.x.end()));
  EXPECT_EQ(d.x.front(), 0);
  EXPECT_EQ(d.x.back(), 9999);
}

TEST(SvgPlot, LinePlotIsBalanced) {
  LinePlot spec;
  spec.title = "memory <rank 0>";
  const std::string svg = line_plot(spec, {Series{"A", "#123", {0, 1, 2}, {0, 5, 1}, true, false}});
  EXPECT_EQ(html_balance_problem(svg), "");
  EXPECT_EQ(count_of(svg, "<polyline"), 1u);
  EXPECT_NE(svg.find("memory &lt;rank 0&gt;"), std::string::npos);
}

// Three spans far apart: three rectangles, each with its own tooltip.
TEST(SvgPlot, TimelineDrawsSeparateSpans) {
  Timeline spec;
  spec.t0 = 0;
  spec.t1 = 3;
  spec.palette = {"#111", "#222"};
  spec.legend = {"", ""};
  const std::vector<std::string> names = {"one", "two", "three"};
  Lane lane{"compute", {{0, 0.5, 0, 0}, {1, 1.5, 1, 1}, {2, 2.5, 0, 2}}, false,
            [&](int64_t item) { return names.at(size_t(item)); }};
  const std::string svg = timeline(spec, {lane});
  EXPECT_EQ(html_balance_problem(svg), "");
  EXPECT_EQ(count_of(svg, "<rect"), 3u);
  EXPECT_NE(svg.find("<title>two</title>"), std::string::npos);
  EXPECT_NE(svg.find("fill=\"#222\""), std::string::npos);
}

// Two lanes of 50,000 touching spans each, bounded to 300 rectangles.
TEST(SvgPlot, TimelineMergesToItsBound) {
  Timeline spec;
  spec.t0 = 0;
  spec.t1 = 100000;
  spec.palette = {"#111", "#222"};
  spec.max_rects = 300;
  std::vector<Lane> lanes(2);
  for (int l = 0; l < 2; ++l)
    for (int i = 0; i < 50000; ++i) lanes[size_t(l)].spans.push_back({2.0 * i, 2.0 * i + 1.5, i % 2, i});
  const std::string svg = timeline(spec, lanes);
  EXPECT_EQ(html_balance_problem(svg), "");
  EXPECT_LE(count_of(svg, "<rect"), 300u);
  EXPECT_GE(count_of(svg, "<rect"), 2u);
  EXPECT_NE(svg.find("tasks from"), std::string::npos);  // a merged rectangle says so
}

}  // namespace
}  // namespace tandem::svg
