// The estimate against the simulator on a grid of GPT 1.3B points on 8 H200s
// (scenarios/gpt-1.3b-h200.textproto): sp 1/2/4/8 with the three sequence modes, tensor-parallel
// modes, ZeRO stages, pipelines and offloads; docs/search.md "Session 15: the estimate against
// the simulator". A measurement run by hand (it simulates 50 points: seconds on a quiet machine,
// minutes on a loaded one): `build/tests/bench/tandem-bench-estimate-grid`. It prints each point's
// estimate and simulated iteration time and the agreement (search/agreement.h) over all points and
// over the simulator's best 10; nothing is asserted (exit 1 only when a point does not simulate).
#include <algorithm>
#include <cstdio>
#include <memory>
#include <string>
#include <vector>

#include "search/agreement.h"
#include "search/estimate.h"
#include "search/layer_probe.h"
#include "shared/error.h"
#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::search {
namespace {

const std::string kGpt13 = std::string(TANDEM_SOURCE_DIR) + "/scenarios/gpt-1.3b-h200.textproto";

std::vector<std::vector<std::string>> grid() {
  std::vector<std::vector<std::string>> g;
  const std::vector<std::string> eight = {"cluster.gpus=8", "strategy.micro_batch=1"};
  auto add = [&](std::vector<std::string> own) {
    std::vector<std::string> sets = eight;
    sets.insert(sets.end(), own.begin(), own.end());
    g.push_back(sets);
  };
  // Sequence modes: sp 1 (dp 8) and sp 2/4/8 (dp 8/sp), one and four micro-batches, no flash
  // attention (ring's rule).
  for (int m : {1, 4}) {
    add({"strategy.flash_attention=false", "strategy.global_batch=" + std::to_string(8 * m)});
    for (int sp : {2, 4, 8})
      for (const char* mode : {"ulysses", "ring_attention", "ring"})
        add({"strategy.flash_attention=false", "strategy.sp=" + std::to_string(sp), std::string("strategy.sp_mode=") + mode,
             "strategy.global_batch=" + std::to_string(8 / sp * m)});
  }
  // Tensor-parallel modes, one micro-batch of 4 (3d's q*q blocks).
  for (const char* tp : {"2", "4", "8"})
    add({std::string("strategy.tp=") + tp, "strategy.micro_batch=4", "strategy.global_batch=" + std::to_string(4 * 8 / std::stoi(tp))});
  add({"strategy.tp=4", "strategy.tp_mode=2d", "strategy.micro_batch=4", "strategy.global_batch=8"});
  add({"strategy.tp=8", "strategy.tp_mode=2.5d", "strategy.tp_depth=2", "strategy.micro_batch=4", "strategy.global_batch=4"});
  add({"strategy.tp=8", "strategy.tp_mode=3d", "strategy.micro_batch=4", "strategy.global_batch=4"});
  add({"strategy.tp=2", "strategy.sp=4", "strategy.sp_mode=ulysses", "strategy.global_batch=4"});
  // Session 10's optimistic points: dp 4 x tp 2, ZeRO 1, overlap_param_gather on, one and four
  // micro-batches, tp_comm_overlap off and on (Megatron SP, which the userbuffers need).
  for (int m : {1, 4})
    for (const char* ub : {"false", "true"})
      add({"strategy.tp=2", "strategy.zero_stage=1", "software.overlap_param_gather=true", "strategy.sp_mode=megatron",
           std::string("software.tp_comm_overlap=") + ub, "strategy.global_batch=" + std::to_string(4 * m)});
  // ZeRO stages at dp 8, one and four micro-batches.
  for (int m : {1, 4})
    for (const char* z : {"0", "1", "2", "3"})
      add({std::string("strategy.zero_stage=") + z, "strategy.global_batch=" + std::to_string(8 * m)});
  add({"strategy.zero_stage=1", "strategy.sp=8", "strategy.sp_mode=ulysses", "strategy.flash_attention=false",
       "strategy.global_batch=1"});
  // Pipelines (1F1B, 8 micro-batches).
  add({"strategy.pp=2", "strategy.global_batch=32"});
  add({"strategy.pp=4", "strategy.global_batch=16"});
  add({"strategy.pp=4", "strategy.sp=2", "strategy.sp_mode=ulysses", "strategy.flash_attention=false", "strategy.global_batch=8"});
  // Offloads at dp 8 (params and auto at ZeRO 3's rule: Gemini's chunks), four micro-batches.
  add({"strategy.offload=optimizer", "strategy.global_batch=32"});
  add({"strategy.offload=params", "strategy.offload_fraction=0.5", "strategy.zero_stage=3", "strategy.global_batch=32"});
  add({"strategy.offload=auto", "strategy.zero_stage=3", "strategy.global_batch=32"});
  // The gradients' reduction during or after the backward (the scenario's software preset sets it).
  for (const char* overlap : {"true", "false"})
    for (int m : {1, 4})
      add({std::string("software.grad_reduce_overlap=") + overlap, "strategy.global_batch=" + std::to_string(8 * m)});
  return g;
}

void run_grid() {
  SearchResult r;
  std::unique_ptr<LayerProbes> probes;
  for (const auto& sets : grid()) {
    const Scenario sc = load_scenario(kGpt13, sets);
    if (!probes) probes = std::make_unique<LayerProbes>(sc.cluster);
    RankedPoint p;
    p.estimate = estimate(sc, probes->costs(sc), probes->comm());
    const sim::SimResult s = sim::simulate(Schedule(sc));
    if (s.oom) {
      std::string all;
      for (const std::string& x : sets) all += " " + x;
      throw Error("estimate grid: the simulator ran out of memory on" + all);
    }
    p.simulated.status = sweep::PointStatus::kOk;
    p.simulated.iteration_time_s = s.iteration_time_s;
    p.sets.assign(sets.begin() + 2, sets.end());
    std::string name;
    for (const std::string& x : p.sets) {
      if (!name.empty()) name += ' ';
      name.append(x, x.find('.') + 1, std::string::npos);
    }
    std::printf("| %s | %.4f | %.4f | %+.1f %% | %.4f |\n", name.c_str(), p.estimate.iteration_s, s.iteration_time_s,
                100 * (p.estimate.iteration_s / s.iteration_time_s - 1), p.estimate.comm_s);
    std::fflush(stdout);
    r.best.push_back(std::move(p));
  }
  const Agreement all = agreement(r);
  std::printf("all %zu points: median |error| %.1f %%, worst %.1f %%, Kendall tau %.3f\n", all.points,
              100 * all.median_error, 100 * all.worst_error, all.kendall_tau);
  // The simulator's best 10, and how many of them are among the estimate's best 10.
  std::vector<RankedPoint> by_sim = r.best, by_est = r.best;
  std::sort(by_sim.begin(), by_sim.end(), [](const RankedPoint& a, const RankedPoint& b) {
    return a.simulated.iteration_time_s < b.simulated.iteration_time_s;
  });
  std::sort(by_est.begin(), by_est.end(),
            [](const RankedPoint& a, const RankedPoint& b) { return a.estimate.iteration_s < b.estimate.iteration_s; });
  const size_t k = 10;
  size_t found = 0;
  for (size_t i = 0; i < k; ++i)
    for (size_t j = 0; j < k; ++j) found += by_sim[i].sets == by_est[j].sets;
  SearchResult top;
  top.best.assign(by_sim.begin(), by_sim.begin() + k);
  const Agreement t = agreement(top);
  std::printf("simulator's best %zu: median |error| %.1f %%, worst %.1f %%, Kendall tau %.3f; %zu of them in the estimate's best %zu\n",
              k, 100 * t.median_error, 100 * t.worst_error, t.kendall_tau, found, k);
}

}  // namespace
}  // namespace tandem::search

int main() {
  try {
    tandem::search::run_grid();
  } catch (const tandem::Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
