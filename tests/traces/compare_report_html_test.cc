#include "traces/report/compare_report_html.h"

#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "html_check.h"
#include "reference_trace.h"
#include "shared/scenario.h"
#include "trace_test_util.h"
#include "traces/trace_builder.h"

namespace tandem {
namespace {

using testing::count_of;
using testing::html_balance_problem;

// Rank r's tasks back to back from 0; B's GEMM 10% slower (as in compare_test.cc): A 2.5 s,
// B 2.55 s per rank, error -1/51 = -1.96%, the GEMM's -1/11 = -9.09%.
proto::Trace serial_trace(const Schedule& s, double gemm_factor, const std::string& machine = "test") {
  static constexpr double kDurations[] = {0, 0.5, 0.25, 0.125, 0.125, 0.25, 1.0, 0.25, 0};
  TraceBuilder b(s, "sim", machine);
  for (int rank = 0; rank < 2; ++rank) {
    b.begin_rank(s.program(rank));
    double t = 0;
    for (int task = 0; task < testing::kSampleTasks; ++task) {
      const double d = kDurations[task] * (task == 1 ? gemm_factor : 1.0);
      b.task(rank, TaskId(task), t, t + d);
      t += d;
    }
    b.memory(rank, 0.0, 48 * testing::kMiB, 0);
    b.memory(rank, t, 0, 0);
  }
  return b.finish();
}

TEST(CompareHtml, BalancedSelfContainedWithTheHeadline) {
  Schedule s = testing::sample_schedule();
  const proto::Trace a = serial_trace(s, 1.0), b = serial_trace(s, 1.1, "cpu <x86> & \"friends\"");
  CompareOptions o;
  o.name_a = "pred.trace";
  o.name_b = "meas.trace";
  const std::string html = comparison_html(compare_traces(a, b, o), a, b);
  EXPECT_EQ(html_balance_problem(html), "");
  EXPECT_EQ(html.rfind("<!DOCTYPE html>", 0), 0u);
  EXPECT_NE(html.find("<div class=\"v\" id=\"iteration-a\">2.50 s</div>"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"v\" id=\"iteration-b\">2.55 s</div>"), std::string::npos);
  EXPECT_NE(html.find("id=\"iteration-error\">-1.96%</div>"), std::string::npos);
  EXPECT_NE(html.find("gemm 2048x4608x12288 fp16"), std::string::npos);
  EXPECT_NE(html.find("-9.09%"), std::string::npos);
  EXPECT_NE(html.find("pred.trace"), std::string::npos);
  EXPECT_NE(html.find("cpu &lt;x86&gt; &amp; &quot;friends&quot;"), std::string::npos);
  // Four plots: iteration per rank, label bars, timeline, memory; each drawn.
  EXPECT_EQ(count_of(html, "<svg"), 4u);
  EXPECT_GE(count_of(html, "<rect"), 10u);
  EXPECT_GE(count_of(html, "<polyline"), 4u);  // 2 ranks + 2 memory series
  // Self-contained: no script, nothing fetched.
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_EQ(html.find("src="), std::string::npos);
  EXPECT_EQ(html.find("href="), std::string::npos);
  EXPECT_EQ(html.find("url("), std::string::npos);
  EXPECT_EQ(html.find("@import"), std::string::npos);
}

// The headline shows A's prediction interval and whether B's iteration time (2.55 s) is in it.
TEST(CompareHtml, HeadlineShowsThePredictionInterval) {
  Schedule s = testing::sample_schedule();
  proto::Trace a = serial_trace(s, 1.0);
  const proto::Trace b = serial_trace(s, 1.1);
  std::string html = comparison_html(compare_traces(a, b), a, b);
  EXPECT_EQ(html.find("id=\"interval-a\""), std::string::npos);
  a.set_iteration_time_low_s(2.4);
  a.set_iteration_time_high_s(2.5);
  html = comparison_html(compare_traces(a, b), a, b);
  EXPECT_EQ(html_balance_problem(html), "");
  EXPECT_NE(html.find("id=\"interval-a\">2.40 s &ndash; 2.50 s</div>"), std::string::npos);
  EXPECT_NE(html.find("<div class=\"bad\" id=\"interval-verdict\">B outside</div>"), std::string::npos);
  a.set_iteration_time_high_s(2.6);
  html = comparison_html(compare_traces(a, b), a, b);
  EXPECT_NE(html.find("<div class=\"good\" id=\"interval-verdict\">B inside</div>"), std::string::npos);
}

// 60k compute tasks and 20k collectives on one rank: the timeline stays within its bound of
// rectangles and the page stays small.
TEST(CompareHtml, LargeTraceStaysBounded) {
  std::vector<Program> programs(1);
  programs[0].rank = 0;
  for (int i = 0; i < 80000; ++i) {
    Task t;
    t.id = TaskId(i);
    if (i % 4 == 3) {
      Collective c;
      c.group = 0;
      c.bytes = 1 << 20;
      t.op = c;
      t.stream = Stream::kComm;
    } else {
      t.op = testing::compute(Kernel::kGemm, DType::kFp16, {64, 64, int64_t(64 * (1 + i % 3))});
    }
    programs[0].tasks.push_back(t);
  }
  std::vector<ProcessGroup> groups{ProcessGroup{0, GroupKind::kDp, 0, {0}}};
  Schedule s(testing::sample_scenario(), 1, groups, std::make_unique<testing::FixedGenerator>(programs));
  auto trace = [&](double scale) {
    TraceBuilder b(s, "sim", "");
    b.begin_rank(s.program(0));
    double compute = 0, comm = 0;
    for (int i = 0; i < 80000; ++i) {
      double& t = i % 4 == 3 ? comm : compute;
      const double d = 1e-5 * scale * (1 + i % 3);
      b.task(0, TaskId(i), t, t + d);
      t += d + 1e-6;
      b.memory(0, t, int64_t(i % 1000) << 20, 0);
    }
    return b.finish();
  };
  const proto::Trace a = trace(1.0), b = trace(1.2);
  const std::string html = comparison_html(compare_traces(a, b), a, b);
  EXPECT_EQ(html_balance_problem(html), "");
  EXPECT_LE(count_of(html, "<rect"), kMaxTimelineRects + 100);
  EXPECT_LT(html.size(), size_t(2) << 20) << html.size();
}

TEST(CompareHtml, GeneratedScheduleReport) {
  Schedule s(load_scenario(TANDEM_SOURCE_DIR "/scenarios/tiny-gpt.textproto",
                           {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"}));
  const proto::Trace a = testing::reference_trace(s, testing::prediction_cost, "sim", "cost A");
  const proto::Trace b = testing::reference_trace(s, testing::measurement_cost, "host", "cost B");
  const Comparison c = compare_traces(a, b);
  testing::TempDir dir;
  write_comparison_html(dir.file("out/report.html"), c, a, b);
  std::ifstream in(dir.file("out/report.html"));
  std::stringstream text;
  text << in.rdbuf();
  EXPECT_EQ(text.str(), comparison_html(c, a, b));
  EXPECT_EQ(html_balance_problem(text.str()), "");
  EXPECT_NE(text.str().find(format_error(c.iteration.error())), std::string::npos);
  EXPECT_EQ(dir.entries(), std::vector<std::string>{"out"});  // no temporary file left
}

// 100 ranks: the table lists the 64 of largest |error| and says so; rank r's GEMM takes 1 s in B
// and 1 + r/100 s in A, so the listed ranks are 36..99.
TEST(CompareHtml, ManyRanksListTheWorst) {
  constexpr int kRanks = 100;
  std::vector<Program> programs(kRanks);
  for (int r = 0; r < kRanks; ++r) {
    programs[size_t(r)].rank = r;
    Task t;
    t.id = 0;
    t.op = testing::compute(Kernel::kGemm, DType::kFp16, {64, 64, 64});
    programs[size_t(r)].tasks.push_back(t);
  }
  Scenario sc = testing::sample_scenario();
  sc.cluster.gpus = kRanks;
  Schedule s(sc, kRanks, {}, std::make_unique<testing::FixedGenerator>(programs));
  auto trace = [&](bool a) {
    TraceBuilder b(s, "sim", "");
    for (int r = 0; r < kRanks; ++r) {
      b.begin_rank(s.program(r));
      b.task(r, 0, 0, a ? 1 + r / 100.0 : 1.0);
    }
    return b.finish();
  };
  const proto::Trace a = trace(true), b = trace(false);
  const std::string html = comparison_html(compare_traces(a, b), a, b);
  EXPECT_EQ(html_balance_problem(html), "");
  EXPECT_NE(html.find("The 64 ranks of largest |error| out of 100"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>99</td>"), std::string::npos);
  EXPECT_NE(html.find("<tr><td>36</td>"), std::string::npos);
  EXPECT_EQ(html.find("<tr><td>35</td>"), std::string::npos);
}

}  // namespace
}  // namespace tandem
