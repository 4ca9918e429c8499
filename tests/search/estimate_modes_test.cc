// The estimate of the modes the space gained in Session 14 (tp_mode 3d, Colossal-AI's ring
// self-attention, offload params with its fraction, offload auto) against the simulator: on GPT
// 1.3B (scenarios/gpt-1.3b-h200.textproto) each small set of points differing in that mode only
// must be ranked by the estimate as `tandem sim` ranks it (what the search needs of the estimate:
// its order, search/estimate.h; no figure of the program's output is asserted). The new modes'
// costs: 3d's collectives and ring's passes come from the layer probe's replayed program
// (search/layer_probe.h), params' host Adam and copies from the probe's optimizer terms (its key
// now takes the fraction); docs/search.md "Session 14: the space".
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "search/estimate.h"
#include "search/layer_probe.h"
#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::search {
namespace {

const std::string kGpt13 = std::string(TANDEM_SOURCE_DIR) + "/scenarios/gpt-1.3b-h200.textproto";

// Estimates and simulates each point (base + its own sets), prints both and expects the estimate's
// order to be the simulator's.
void expect_same_order(const std::vector<std::string>& base, const std::vector<std::vector<std::string>>& points) {
  std::vector<double> est, sim;
  std::vector<std::string> names;
  std::unique_ptr<LayerProbes> probes;
  for (const auto& own : points) {
    std::vector<std::string> sets = base;
    sets.insert(sets.end(), own.begin(), own.end());
    const Scenario sc = load_scenario(kGpt13, sets);
    if (!probes) probes = std::make_unique<LayerProbes>(sc.cluster);
    const Estimate e = estimate(sc, probes->costs(sc), probes->comm());
    est.push_back(e.iteration_s);
    const sim::SimResult r = sim::simulate(Schedule(sc));
    ASSERT_FALSE(r.oom) << ::testing::PrintToString(own);
    sim.push_back(r.iteration_time_s);
    names.push_back(::testing::PrintToString(own));
    std::printf("%-66s estimate %.4f s (optimizer %.4f, offload %.4f, comm %.4f)  simulator %.4f s  (%+.1f %%)\n",
                names.back().c_str(), est.back(), e.optimizer_s, e.offload_s, e.comm_s, sim.back(),
                100 * (est.back() / sim.back() - 1));
  }
  // Pairwise and strict: a point the simulator finds faster must be estimated faster (a tie in
  // the estimate, as two params fractions sharing one layer probe would give, fails).
  for (size_t i = 0; i < sim.size(); ++i)
    for (size_t j = 0; j < sim.size(); ++j)
      if (sim[i] < sim[j]) {
        EXPECT_LT(est[i], est[j]) << names[i] << " against " << names[j];
      }
}

TEST(EstimateModes, TensorModesAtTpEightAsTheSimulator) {
  // tp 8 on 8 H200s, micro-batch 4 (3d splits it into q*q = 4 blocks): 1d, 2.5d with depth 2
  // (q = 2) and 3d (q = 2), one micro-batch.
  expect_same_order({"cluster.gpus=8", "strategy.tp=8", "strategy.micro_batch=4", "strategy.global_batch=4"},
                    {{"strategy.tp_mode=1d"},
                     {"strategy.tp_mode=2.5d", "strategy.tp_depth=2"},
                     {"strategy.tp_mode=3d"}});
}

TEST(EstimateModes, SequenceModesAtSpEightAsTheSimulator) {
  // sp 8 on 8 H200s, tp 1, one micro-batch of 1: Ulysses' all-to-alls, ring attention's blocks
  // with their key/value ring, Colossal-AI's ring self-attention's ring passes.
  // Without flash attention: ring materializes the scores (the loader's rule).
  expect_same_order({"cluster.gpus=8", "strategy.sp=8", "strategy.micro_batch=1", "strategy.global_batch=1",
                     "strategy.flash_attention=false"},
                    {{"strategy.sp_mode=ulysses"}, {"strategy.sp_mode=ring_attention"}, {"strategy.sp_mode=ring"}});
}

TEST(EstimateModes, ParamsOffloadFractionsAsTheSimulator) {
  // One H200, 4 micro-batches (the passes' uploads of every micro-batch): no offload, params at
  // the space's two fractions, auto.
  expect_same_order({},
                    {{"strategy.offload=none"},
                     {"strategy.offload=params", "strategy.offload_fraction=0.5"},
                     {"strategy.offload=params", "strategy.offload_fraction=1"},
                     {"strategy.offload=auto"}});
}

}  // namespace
}  // namespace tandem::search
