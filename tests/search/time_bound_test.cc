// search/time_bound.h: the lower bound on the simulated iteration time is never above the
// simulator's iteration time, on every valid point of two small spaces of the tiny GPT on 4 GPUs
// (every layout, sequence mode, schedule, virtual stages, recompute and micro-batch; one with
// Transformer Engine's userbuffers overlap and Megatron SP, whose chunk GEMMs run on streams of
// their own, one without), each point simulated by `tandem sim`'s simulate().
#include <gtest/gtest.h>

#include <optional>

#include "search/layer_probe.h"
#include "search/point_check.h"
#include "search/search_space.h"
#include "search/time_bound.h"
#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

struct Checked {
  int points = 0;
  double tightest = 0;  // the largest bound / simulated ratio
};

Checked check_space(const std::vector<std::string>& sets) {
  PointChecker checker(kTiny, sets, 4);
  SpaceShape shape;
  fix_keys(shape, sets);
  shape.gpus = checker.gpus(), shape.layers = checker.layers(), shape.global_batch = checker.global_batch();
  std::optional<LayerProbes> probes;
  Checked out;
  Scenario point;
  std::string message;
  for_each_candidate(shape, [&](const Candidate& c) {
    if (!checker.check(candidate_sets(c), &point, &message)) return;
    if (!probes) probes.emplace(point.cluster);
    const double bound = iteration_lower_bound_s(point, probes->costs(point));
    const sim::SimResult r = sim::simulate(Schedule(point));
    ASSERT_FALSE(r.oom) << ::testing::PrintToString(candidate_sets(c));
    ASSERT_GT(bound, 0);
    ASSERT_LE(bound, r.iteration_time_s) << ::testing::PrintToString(candidate_sets(c));
    out.tightest = std::max(out.tightest, bound / r.iteration_time_s);
    ++out.points;
  });
  return out;
}

TEST(TimeBound, NeverAboveTheSimulatedIteration) {
  const std::vector<std::string> fixed = {"strategy.offload=none", "strategy.tp_mode=1d", "strategy.zero_stage=1",
                                          "software.grad_reduce_overlap=true", "software.overlap_param_gather=false"};
  std::vector<std::string> overlap = fixed, plain = fixed;
  overlap.insert(overlap.end(), {"software.tp_comm_overlap=true", "strategy.sp_mode=megatron"});
  plain.insert(plain.end(), {"software.tp_comm_overlap=false", "strategy.recompute=selective", "strategy.micro_batch=1"});
  const Checked a = check_space(overlap), b = check_space(plain);
  EXPECT_GT(a.points, 50);
  EXPECT_GT(b.points, 20);
  std::cout << "points " << a.points << " + " << b.points << ", tightest bound/simulated " << a.tightest << ", "
            << b.tightest << "\n";
}

}  // namespace
}  // namespace tandem::search
