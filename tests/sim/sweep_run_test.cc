// `tandem sweep` on the tiny GPT: the table, invalid and out-of-memory points, the best-per-size
// rule, independence from the number of workers, and the HTML page.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>

#include "shared/error.h"
#include "shared/scenario.h"
#include "sim/sweep/sweep_report_html.h"
#include "sim/sweep/sweep_runner.h"
#include "sim/sweep/sweep_table.h"
#include "tests/traces/html_check.h"
#include "traces/report/svg_plot.h"

namespace tandem::sweep {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

SweepGrid tiny_grid() { return SweepGrid({parse_vary("cluster.gpus=1,2,4"), parse_vary("strategy.tp=1,2")}); }

SweepTable run(int jobs) {
  RunOptions o;
  o.jobs = jobs;
  return run_sweep(kTiny, {}, tiny_grid(), o);
}

class TinySweep : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    serial_ = new SweepTable(run(1));
    parallel_ = new SweepTable(run(2));
  }
  static void TearDownTestSuite() {
    delete serial_;
    delete parallel_;
  }
  static SweepTable* serial_;
  static SweepTable* parallel_;
};
SweepTable* TinySweep::serial_ = nullptr;
SweepTable* TinySweep::parallel_ = nullptr;

TEST_F(TinySweep, SixPointsOneInvalidWithTheLoadersReason) {
  const SweepTable& t = *serial_;
  ASSERT_EQ(t.points.size(), 6u);
  EXPECT_EQ(t.scenario_name, "tiny-gpt");
  for (size_t i = 0; i < t.points.size(); ++i) {
    const SweepPoint& p = t.points[i];
    const bool gpus1_tp2 = p.values == std::vector<std::string>{"1", "2"};
    if (gpus1_tp2) {
      EXPECT_EQ(p.result.status, PointStatus::kInvalid);
      // The reason is the loader's own message for this point.
      std::string loader;
      try {
        load_scenario(kTiny, {"cluster.gpus=1", "strategy.tp=2"});
      } catch (const Error& e) {
        loader = e.what();
      }
      ASSERT_FALSE(loader.empty());
      EXPECT_EQ(p.result.reason, loader);
      EXPECT_TRUE(std::isnan(p.result.tokens_per_s));
      EXPECT_TRUE(std::isnan(p.result.iteration_time_low_s));
      EXPECT_EQ(p.gpus, 1);
    } else {
      EXPECT_EQ(p.result.status, PointStatus::kOk) << i << ": " << p.result.reason;
      EXPECT_GT(p.result.iteration_time_s, 0);
      EXPECT_LE(p.result.iteration_time_low_s, p.result.iteration_time_s);
      EXPECT_LE(p.result.iteration_time_s, p.result.iteration_time_high_s);
      EXPECT_LT(p.result.iteration_time_low_s, p.result.iteration_time_high_s);
      EXPECT_GT(p.result.tokens_per_s, 0);
      EXPECT_GT(p.result.model_tflops_per_gpu, 0);
      EXPECT_GT(p.result.mfu, 0);
      EXPECT_GT(p.result.peak_memory_bytes, 0);
      EXPECT_EQ(p.gpus, std::stoi(p.values[0]));
      // dp is derived from the GPUs.
      EXPECT_EQ(p.result.dp * p.result.tp * p.result.pp * p.result.sp, p.gpus);
      EXPECT_EQ(p.strategy, "tp=" + p.values[1]);
      // tokens/s = global batch (8) * seq_len (32) / iteration time.
      EXPECT_NEAR(p.result.tokens_per_s, 8.0 * 32.0 / p.result.iteration_time_s, 1e-9 * p.result.tokens_per_s);
    }
  }
}

TEST_F(TinySweep, BestPerSizeIsTheMaxOfTokensPerSecond) {
  const SweepTable& t = *serial_;
  const std::vector<BestAtSize> best = best_per_size(t);
  ASSERT_EQ(best.size(), 3u);
  for (size_t k = 0; k < best.size(); ++k) {
    EXPECT_EQ(best[k].gpus, std::vector<int>({1, 2, 4})[k]);
    double max = -1;
    for (const SweepPoint& p : t.points)
      if (p.gpus == best[k].gpus && p.result.status == PointStatus::kOk) max = std::max(max, p.result.tokens_per_s);
    ASSERT_GE(best[k].point, 0);
    const SweepPoint& chosen = t.points[size_t(best[k].point)];
    EXPECT_EQ(chosen.gpus, best[k].gpus);
    EXPECT_EQ(chosen.result.status, PointStatus::kOk);
    EXPECT_EQ(chosen.result.tokens_per_s, max);
  }
  // At one GPU only tp=1 is valid.
  EXPECT_EQ(t.points[size_t(best[0].point)].values[1], "1");
}

TEST_F(TinySweep, ScalingEfficiencyIsPerGpuThroughputOverTheSmallestSize) {
  const SweepTable& t = *serial_;
  for (const SweepPoint& p : t.points) {
    if (p.result.status != PointStatus::kOk) continue;
    const SweepPoint* base = nullptr;
    for (const SweepPoint& q : t.points)
      if (q.strategy == p.strategy && q.result.status == PointStatus::kOk && (!base || q.gpus < base->gpus)) base = &q;
    EXPECT_DOUBLE_EQ(p.scaling_efficiency,
                     (p.result.tokens_per_s / p.gpus) / (base->result.tokens_per_s / base->gpus));
  }
  EXPECT_DOUBLE_EQ(t.points[0].scaling_efficiency, 1.0);  // gpus 1, tp 1: its own base
}

TEST_F(TinySweep, WorkerCountDoesNotChangeTheJson) {
  const std::string a = sweep_json(*serial_), b = sweep_json(*parallel_);
  EXPECT_EQ(a, b);
  EXPECT_NE(a.find("\"format\":\"tandem-sweep-1\""), std::string::npos);
  EXPECT_NE(a.find("\"status\":\"invalid\""), std::string::npos);
  EXPECT_EQ(tandem::testing::count_of(a, "\"index\":"), 6u);
  // The five valid points carry their prediction interval, the invalid one null.
  EXPECT_EQ(tandem::testing::count_of(a, "\"iteration_time_interval_s\":["), 5u);
  EXPECT_EQ(tandem::testing::count_of(a, "\"iteration_time_interval_s\":null"), 1u);
}

TEST_F(TinySweep, HtmlIsWellFormedWithPlotsAndEveryPoint) {
  const std::string html = sweep_html(*serial_);
  EXPECT_EQ(tandem::testing::html_balance_problem(html), "");
  EXPECT_EQ(tandem::testing::count_of(html, "<svg"), 2u);  // throughput and scaling efficiency
  EXPECT_NE(html.find("Best strategy per size"), std::string::npos);
  EXPECT_NE(html.find("tp=2"), std::string::npos);
  // Each valid point's prediction interval, "low-high s" at 4 significant digits; a column head per table.
  EXPECT_EQ(tandem::testing::count_of(html, "<th class=\"n\">80 % interval</th>"), 2u);
  char cell[96];
  const PointResult& r = serial_->points[0].result;
  std::snprintf(cell, sizeof cell, "<td class=\"n\">%.4g-%.4g s</td>", r.iteration_time_low_s, r.iteration_time_high_s);
  EXPECT_NE(html.find(cell), std::string::npos) << cell;
  EXPECT_EQ(html.find("<script"), std::string::npos);
  EXPECT_NE(html.find(svg::escape(serial_->points[1].result.reason)), std::string::npos);
}

TEST(Sweep, OutOfMemoryPointsAreKeptWithTheirReason) {
  RunOptions o;
  o.jobs = 2;
  const SweepTable t = run_sweep(kTiny, {"cluster.gpus=2"}, SweepGrid({parse_vary("cluster.hbm_gib=80,0.0001")}), o);
  ASSERT_EQ(t.points.size(), 2u);
  EXPECT_EQ(t.points[0].result.status, PointStatus::kOk) << t.points[0].result.reason;
  EXPECT_EQ(t.points[1].result.status, PointStatus::kOom);
  EXPECT_NE(t.points[1].result.reason.find("out of memory"), std::string::npos) << t.points[1].result.reason;
  // Not varying the size: one size, the strategy is the varied value, a bar chart instead of scaling lines.
  EXPECT_EQ(t.points[1].gpus, 2);
  EXPECT_EQ(t.points[1].strategy, "hbm_gib=0.0001");
  const std::vector<BestAtSize> best = best_per_size(t);
  ASSERT_EQ(best.size(), 1u);
  EXPECT_EQ(best[0].point, 0);
  const std::string html = sweep_html(t);
  EXPECT_EQ(tandem::testing::html_balance_problem(html), "");
  EXPECT_EQ(tandem::testing::count_of(html, "<svg"), 1u);
}

}  // namespace
}  // namespace tandem::sweep
