// The search's best point is the best of an exhaustive simulation: on the tiny GPT on 8 GPUs, the
// space of layouts, sequence-parallel modes, pipeline schedules and micro-batches (ZeRO, recompute
// and the overlaps fixed) is simulated point by point through a sweep grid written out here (not
// the search's enumerator), and the fastest simulated iteration must be the search's first result
// with its default K = 16.
#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <string>
#include <vector>

#include "search/search_run.h"
#include "sim/sweep/sweep_grid.h"
#include "sim/sweep/sweep_runner.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

TEST(SearchBest, EqualsTheBestOfAnExhaustiveSimulation) {
  const std::vector<std::string> fixed = {"strategy.recompute=none", "strategy.zero_stage=0",
                                          "software.grad_reduce_overlap=true", "software.overlap_param_gather=false",
                                          "software.tp_comm_overlap=false"};
  SearchOptions o;
  o.gpus = 8;
  o.jobs = 2;
  const SearchResult r = run_search(kTiny, fixed, o);
  ASSERT_FALSE(r.best.empty());
  ASSERT_EQ(r.best[0].simulated.status, sweep::PointStatus::kOk) << r.best[0].simulated.reason;

  // Every strategy of 8 GPUs over these axes (dp = 8 / (tp pp), derived by the loader); the
  // loader refuses the combinations that break a rule, and they stay out of the minimum.
  std::vector<std::string> sets = fixed;
  sets.push_back("cluster.gpus=8");
  const sweep::SweepGrid grid({sweep::parse_vary("strategy.tp=1,2,4,8"), sweep::parse_vary("strategy.pp=1,2,4,8"),
                               sweep::parse_vary("strategy.sp_mode=none,megatron"),
                               sweep::parse_vary("strategy.pp_schedule=1f1b,gpipe,interleaved"),
                               sweep::parse_vary("strategy.virtual_stages=1,2,4"),
                               sweep::parse_vary("strategy.micro_batch=1,2,4,8")});
  sweep::RunOptions ro;
  ro.jobs = 2;
  const sweep::SweepTable all = sweep::run_sweep(kTiny, sets, grid, ro);
  double best = std::numeric_limits<double>::infinity();
  size_t simulated = 0;
  for (const sweep::SweepPoint& p : all.points)
    if (p.result.status == sweep::PointStatus::kOk) {
      ++simulated;
      best = std::min(best, p.result.iteration_time_s);
    }
  // The same valid points: the grid's extra combinations (virtual stages > 1 without interleaving,
  // micro-batches over global_batch / dp) are all refused, as are the search's extra ones.
  EXPECT_EQ(simulated, r.valid);
  EXPECT_EQ(r.best[0].simulated.iteration_time_s, best);
}

}  // namespace
}  // namespace tandem::search
