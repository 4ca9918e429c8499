// The two shortcuts of the search's speed (issue #17) against the slow paths they replace, on every
// point of a tiny and a mid-size space:
// - search/memory_bound.h: the model states' lower bound is never above the planner's peak (so a
//   point it puts over HBM is one the planner refuses too), and equals the planner's own model
//   states of the rank it describes when there is no pipeline;
// - search/layout_rules.h: a layout rule's verdict taken once per layout gives the same search
//   (every count, every rule's example message, the same K best) as the loader on every point;
// - search/split_rules.h: every point of a split the predicate refuses is refused by the loader
//   with one message per split, and the search with it is the loader's on every point;
// and the bound changes nothing in the search's result (JSON byte for byte, timings aside).
#include <gtest/gtest.h>

#include <iostream>
#include <map>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "search/layer_probe.h"
#include "search/memory_bound.h"
#include "search/point_check.h"
#include "search/search_report.h"
#include "search/search_run.h"
#include "search/search_space.h"
#include "search/split_rules.h"
#include "shared/error.h"
#include "shared/memory_timeline.h"
#include "shared/plan_summary.h"
#include "shared/schedule.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";
const std::string kGpt13 = std::string(TANDEM_SOURCE_DIR) + "/scenarios/gpt-1.3b-h200.textproto";
// The mid-size space: GPT 1.3B (bf16: the fp32 master copy is on) on 8 H200s, the software
// switches fixed (they move no model state), every other axis searched.
const std::vector<std::string> kGpt13Sets = {"software.grad_reduce_overlap=true", "software.overlap_param_gather=false",
                                             "software.tp_comm_overlap=false"};

struct BoundCheck {
  uint64_t valid = 0, compared_with_model_states = 0, over_hbm = 0;
  uint64_t with_activations = 0;  // points where the activations raised the bound
  uint64_t over_hbm_by_activations = 0;  // over HBM with the activations, not without
  uint64_t no_placement = 0;  // offload auto points whose plan has no placement (out of memory, no peak)
};

// Every valid point of the space: bound <= the planner's peak; pp = 1: bound = rank 0's model states.
BoundCheck check_bound(const std::string& scenario, const std::vector<std::string>& sets, int gpus) {
  PointChecker checker(scenario, sets, gpus);
  SpaceShape shape;
  fix_keys(shape, sets);
  shape.gpus = checker.gpus(), shape.layers = checker.layers(), shape.global_batch = checker.global_batch();
  BoundCheck out;
  Scenario point;
  std::string message;
  std::optional<LayerProbes> probes;
  for_each_candidate(shape, [&](const Candidate& c) {
    if (!checker.check(candidate_sets(c), &point, &message)) return;
    ++out.valid;
    if (!probes) probes.emplace(point.cluster);
    const int64_t bound = peak_memory_lower_bound(point);
    const int64_t with_activations = peak_memory_lower_bound(point, probes->costs(point).layer_stored_bytes);
    const int64_t hbm = point.cluster.hbm_bytes();
    ASSERT_GT(bound, 0);
    ASSERT_GE(with_activations, bound);
    // offload auto's planner refuses a point where no placement fits one operator (out of memory,
    // exit 3, shared/auto_placement.cc): there is no peak to compare with, and nothing the bound
    // could get wrong (it only takes out points that do not fit). The layer probe plans auto on a
    // device it fits (search/layer_probe.cc), so the probe above does not throw.
    std::optional<Schedule> built;
    try {
      built.emplace(point);
    } catch (const Error& e) {
      ASSERT_EQ(e.kind(), ErrorKind::kOutOfMemory) << e.what();
      ASSERT_EQ(point.strategy.offload, Offload::kAuto) << e.what();
      ++out.no_placement;
      return;
    }
    const Schedule& schedule = *built;
    const PlanSummary plan = summarize(schedule);
    ASSERT_LE(bound, plan.peak_memory_bytes) << "over the planner's peak at " << ::testing::PrintToString(candidate_sets(c));
    ASSERT_LE(with_activations, plan.peak_memory_bytes)
        << "with activations over the planner's peak at " << ::testing::PrintToString(candidate_sets(c));
    if (with_activations > bound) ++out.with_activations;
    if (bound > hbm) {
      ++out.over_hbm;
      ASSERT_FALSE(plan.fits);
    }
    if (with_activations > hbm && bound <= hbm) {
      ++out.over_hbm_by_activations;
      ASSERT_FALSE(plan.fits);
    }
    if (point.strategy.pp == 1) {
      ASSERT_EQ(bound, memory_profile(schedule, 0).model_states.total()) << ::testing::PrintToString(candidate_sets(c));
      ++out.compared_with_model_states;
    }
  });
  return out;
}

TEST(MemoryBound, NeverAboveThePlannersPeakOnTheTinySpace) {
  // The tiny GPT's whole space on 4 GPUs (on 8 the planning of its 20,520 valid points takes over
  // 3 minutes on the loaded machine); at 1.61 MB of HBM some points are over it by the bound alone.
  const BoundCheck b = check_bound(kTiny, {"cluster.hbm_gib=0.0015"}, 4);
  std::cout << b.valid << " valid, " << b.with_activations << " with activations in the bound, "
            << b.over_hbm_by_activations << " over HBM by them\n";
  EXPECT_GT(b.valid, 1000u);
  EXPECT_GT(b.with_activations, 1000u);
  EXPECT_GT(b.over_hbm_by_activations, 0u);
  EXPECT_GT(b.compared_with_model_states, 0u);
  EXPECT_GT(b.over_hbm, 0u);
}

TEST(MemoryBound, NeverAboveThePlannersPeakOnTheMidSizeSpace) {
  std::vector<std::string> sets = kGpt13Sets;
  sets.push_back("cluster.hbm_gib=8");  // 1.3B: 2.6 GB of bf16 parameters; ZeRO 0 without offload is over 8 GiB at dp*tp*pp = 8*1*1
  const BoundCheck b = check_bound(kGpt13, sets, 8);
  std::cout << b.valid << " valid, " << b.with_activations << " with activations in the bound, "
            << b.over_hbm_by_activations << " over HBM by them\n";
  EXPECT_GT(b.valid, 1000u);
  EXPECT_GT(b.with_activations, 1000u);
  EXPECT_GT(b.compared_with_model_states, 0u);
  EXPECT_GT(b.over_hbm, 0u);
}

TEST(MemoryBound, NeverAboveThePlannersPeakWithTheTensorParallelOverlapOn) {
  // Transformer Engine's userbuffers overlap (software.tp_comm_overlap, shared/tp_overlap.cc): the
  // layer probe's stored activations come from its chunked, ring-exchanged program; GPT 1.3B with
  // Megatron sequence parallelism (the overlap's mode), every other layout axis searched.
  const std::vector<std::string> sets = {"software.grad_reduce_overlap=true", "software.overlap_param_gather=false",
                                         "software.tp_comm_overlap=true",     "strategy.tp_mode=1d",
                                         "strategy.sp_mode=megatron",         "strategy.offload=none",
                                         "cluster.hbm_gib=8"};
  const BoundCheck b = check_bound(kGpt13, sets, 8);
  std::cout << b.valid << " valid, " << b.with_activations << " with activations in the bound, "
            << b.over_hbm_by_activations << " over HBM by them\n";
  EXPECT_GT(b.valid, 100u);
  EXPECT_GT(b.with_activations, 100u);
  EXPECT_GT(b.compared_with_model_states, 0u);
}

TEST(MemoryBound, FollowsTheOptimizersStoredStateOnTheMidSizeSpace) {
  // software.master_params / optimizer_state_dtype (Apex's remainders; NeMo's bf16 moments): the
  // bound's optimizer bytes per element are master (4, 2 or 0) + 2 x the moments' dtype, so at
  // pp = 1 it must still equal the planner's own model states (fp32 offload refuses these
  // settings: offload fixed to none).
  for (const std::vector<std::string>& state :
       {std::vector<std::string>{"software.master_params=remainder"},
        std::vector<std::string>{"software.master_params=none", "software.optimizer_state_dtype=param"}}) {
    std::vector<std::string> sets = kGpt13Sets;
    sets.insert(sets.end(), state.begin(), state.end());
    sets.push_back("strategy.offload=none");
    sets.push_back("software.separate_master_copy=false");
    sets.push_back("cluster.hbm_gib=8");
    const BoundCheck b = check_bound(kGpt13, sets, 8);
    EXPECT_GT(b.valid, 100u) << ::testing::PrintToString(state);
    EXPECT_GT(b.compared_with_model_states, 0u) << ::testing::PrintToString(state);
  }
}

std::string json_without_timings(const SearchResult& r) {
  return std::regex_replace(search_json(r), std::regex("\"estimate_[a-z_]*\":[^,]*,"), "");
}

// Every point of the space: where refused_by_split holds, the loader refuses the point, and with the
// message of every other point of its split. Returns how many points the predicate refused.
uint64_t check_split_rules(const std::string& scenario, const std::vector<std::string>& sets, int gpus, bool vary_batch) {
  PointChecker checker(scenario, sets, gpus);
  SpaceShape shape;
  fix_keys(shape, sets);
  shape.gpus = checker.gpus(), shape.layers = checker.layers(), shape.global_batch = checker.global_batch();
  shape.vary_batch = vary_batch;
  std::map<SplitKey, std::string> first;
  uint64_t refused = 0, points = 0;
  Scenario point;
  std::string message;
  for_each_candidate(shape, [&](const Candidate& c) {
    ++points;
    if (!refused_by_split(c, checker.base())) return;
    ++refused;
    const std::vector<std::string> sets_of_c = candidate_sets(c);
    ASSERT_FALSE(checker.check(sets_of_c, &point, &message)) << ::testing::PrintToString(sets_of_c);
    auto [at, fresh] = first.emplace(split_of(c), message);
    if (!fresh) {
      ASSERT_EQ(at->second, message) << ::testing::PrintToString(sets_of_c);
    }
  });
  EXPECT_LT(refused, points);  // some points pass the split rules
  return refused;
}

TEST(SplitRules, OneLoaderMessagePerRefusedSplit) {
  // The tiny GPT (4 layers, 4 heads, seq 32, batch 8) on 8 GPUs: the batch rule (dp*micro_batch
  // must divide 8), interleaved's pp >= 2 and micro-batches a multiple of pp, ulysses' tp*sp | 4
  // heads, megatron and ulysses/ring_attention with 1d only, 2d/2.5d grid rows | micro_batch.
  EXPECT_GT(check_split_rules(kTiny, {}, 8, false), 10000u);
  // Every global batch up to 8 on 16 GPUs (dp*micro_batch over the smaller batches).
  EXPECT_GT(check_split_rules(kTiny, {"strategy.zero_stage=1", "strategy.offload=none"}, 16, true), 10000u);
  // Fixed keys read from the scenario (tp_mode 2d, interleaved with 2 virtual stages, micro_batch 1).
  EXPECT_GT(check_split_rules(kTiny, {"strategy.tp_mode=2d", "strategy.pp_schedule=interleaved",
                                      "strategy.virtual_stages=2", "strategy.micro_batch=1"}, 8, false),
            100u);
}

// Every point of the space: where refused_by_gemini holds, the loader refuses the point, and with the
// message of every other point of its key. Returns how many points the predicate refused.
uint64_t check_gemini_rules(const std::string& scenario, const std::vector<std::string>& sets, int gpus) {
  PointChecker checker(scenario, sets, gpus);
  SpaceShape shape;
  fix_keys(shape, sets);
  shape.gpus = checker.gpus(), shape.layers = checker.layers(), shape.global_batch = checker.global_batch();
  std::map<GeminiKey, std::string> first;
  uint64_t refused = 0, points = 0;
  Scenario point;
  std::string message;
  for_each_candidate(shape, [&](const Candidate& c) {
    ++points;
    GeminiKey key;
    if (!refused_by_gemini(c, checker.base(), &key)) return;
    ++refused;
    const std::vector<std::string> sets_of_c = candidate_sets(c);
    ASSERT_FALSE(checker.check(sets_of_c, &point, &message)) << ::testing::PrintToString(sets_of_c);
    auto [at, fresh] = first.emplace(key, message);
    if (!fresh) {
      ASSERT_EQ(at->second, message) << ::testing::PrintToString(sets_of_c);
    }
  });
  EXPECT_LT(refused, points);
  return refused;
}

// The predicate by hand (shared/offload_rules.cc): params or auto with pp 2 (the key without ZeRO),
// with dp 2 and ZeRO 1 (the key with it); not with ZeRO 3, one GPU, or the other offload modes.
TEST(GeminiRules, ThePredicateByHand) {
  PointChecker checker(kTiny, {}, 8);
  auto at = [](const char* mode) {
    for (int i = 0; i < int(std::size(kOffloads)); ++i)
      if (std::string(kOffloads[i].value) == mode) return int8_t(i);
    return int8_t(-1);
  };
  Candidate c;
  c.dp = 1, c.tp = 1, c.pp = 2, c.sp = 1, c.zero = 1, c.recompute = 0, c.offload = at("params");
  GeminiKey key;
  ASSERT_TRUE(refused_by_gemini(c, checker.base(), &key));
  EXPECT_EQ(std::get<3>(key), -2);  // the pipeline rule comes first and does not read zero_stage
  c.offload = at("auto");
  EXPECT_TRUE(refused_by_gemini(c, checker.base(), &key));
  c.offload = at("optimizer");
  EXPECT_FALSE(refused_by_gemini(c, checker.base(), &key));
  c.offload = at("params"), c.pp = 1, c.dp = 2;
  ASSERT_TRUE(refused_by_gemini(c, checker.base(), &key));
  EXPECT_EQ(std::get<3>(key), 1);
  c.zero = 3;
  EXPECT_FALSE(refused_by_gemini(c, checker.base(), &key));
  c.zero = 0, c.dp = 1;
  EXPECT_FALSE(refused_by_gemini(c, checker.base(), &key));
}

TEST(GeminiRules, OneLoaderMessagePerKey) {
  // The tiny GPT on 8 GPUs: params (two fractions) and auto with pp 2, 4 or 8, or with dp*sp > 1
  // below ZeRO-3, over every other axis.
  EXPECT_GT(check_gemini_rules(kTiny, {}, 8), 10000u);
  // ZeRO fixed at 1: every layout with dp*sp > 1 refused by the ZeRO rule, whose message names it.
  EXPECT_GT(check_gemini_rules(kTiny, {"strategy.zero_stage=1"}, 8), 1000u);
}

TEST(SearchShortcuts, SplitRulesChangeNothingWithVaryBatch) {
  std::string slow_text, fast_text;
  SearchOptions o;
  o.gpus = 16, o.top = 16, o.simulate = false, o.vary_batch = true;
  const std::vector<std::string> sets = {"strategy.recompute=none", "strategy.offload=none"};
  o.rule_shortcuts = false, o.memory_bound = false;
  slow_text = json_without_timings(run_search(kTiny, sets, o));
  o.rule_shortcuts = true, o.memory_bound = true;
  fast_text = json_without_timings(run_search(kTiny, sets, o));
  EXPECT_EQ(slow_text, fast_text);
}

SearchResult search(const std::string& scenario, const std::vector<std::string>& sets, int gpus, bool rule_shortcuts,
                    bool memory_bound) {
  SearchOptions o;
  o.gpus = gpus;
  o.top = 16;
  o.simulate = false;
  o.rule_shortcuts = rule_shortcuts;
  o.memory_bound = memory_bound;
  return run_search(scenario, sets, o);
}

// Both ways give the same JSON (timings aside), or the same bad-input message; returns the fast one's
// count of points over HBM by the bound (-1 on bad input).
int64_t expect_same_search(const std::string& scenario, const std::vector<std::string>& sets, int gpus) {
  std::string slow_text, fast_text;
  int64_t bounded = -1;
  try {
    const SearchResult slow = search(scenario, sets, gpus, false, false);
    EXPECT_EQ(slow.out_of_memory_by_bound, 0u);
    slow_text = json_without_timings(slow);
  } catch (const Error& e) {
    slow_text = e.what();
  }
  try {
    const SearchResult fast = search(scenario, sets, gpus, true, true);
    fast_text = json_without_timings(fast);
    bounded = int64_t(fast.out_of_memory_by_bound);
  } catch (const Error& e) {
    fast_text = e.what();
  }
  EXPECT_EQ(slow_text, fast_text);
  return bounded;
}

TEST(SearchShortcuts, LayoutRulesChangeNothingOnTheTinySpace) {
  // 8 GPUs: tp 8 does not divide the 4 heads, 2d needs a square tp (layouts refused by layout
  // rules). At 1.61 MB of HBM the best-estimated points are over it (the bound takes some out).
  EXPECT_EQ(expect_same_search(kTiny, {}, 8), 0);
}

TEST(SearchShortcuts, BoundChangesNothingOnTheTinySpaceAtSmallHbm) {
  EXPECT_GT(expect_same_search(kTiny, {"cluster.hbm_gib=0.0015"}, 8), 0);
}

TEST(SearchShortcuts, SameBadInputMessages) {
  // 6 GPUs: no valid strategy (tp 3 and 6 do not divide the heads, and dp*micro_batch must divide
  // the global batch 8, so tp*pp*sp would be 3 or 6 with tp, pp | 4 and sp | 32): the same message.
  EXPECT_EQ(expect_same_search(kTiny, {}, 6), -1);
  // 1 GPU at 1 MiB of HBM: fits nowhere, with the same smallest planned peak and strategy.
  EXPECT_EQ(expect_same_search(kTiny, {"cluster.hbm_gib=0.0009765625"}, 1), -1);
}

TEST(SearchShortcuts, LayoutRulesAndBoundChangeNothingOnTheMidSizeSpace) {
  std::vector<std::string> sets = kGpt13Sets;
  sets.push_back("cluster.hbm_gib=2");  // under the model states of the best-estimated layouts
  EXPECT_GT(expect_same_search(kGpt13, sets, 8), 0);  // the bound did take points out without a plan
}

// Planning in rounds of forked children (search_run.cc PlanRounds, forking from the first round on)
// against planning one point at a time: the same JSON (timings aside) where the walk meets out-of-memory points between fitting
// ones (1.61 MB of HBM), and the same message where nothing fits (the nothing-fits walk plans in
// rounds too).
TEST(SearchShortcuts, PlanningRoundsChangeNothing) {
  for (const std::vector<std::string>& sets : {std::vector<std::string>{"cluster.hbm_gib=0.0015"}, std::vector<std::string>{}}) {
    std::string texts[2];
    for (int jobs : {1, 3}) {
      SearchOptions o;
      o.gpus = 8, o.top = 16, o.simulate = false, o.plan_jobs = jobs, o.fork_plans_from_s = 0;
      const SearchResult r = run_search(kTiny, sets, o);
      if (jobs == 1) {
        EXPECT_GT(r.memory_planned, r.best.size()) << "the walk planned no point beyond the K that fit";
      }
      texts[jobs == 1 ? 0 : 1] = json_without_timings(r);
    }
    EXPECT_EQ(texts[0], texts[1]) << ::testing::PrintToString(sets);
  }
  std::string messages[2];
  for (int jobs : {1, 3}) {
    SearchOptions o;
    o.gpus = 1, o.top = 16, o.simulate = false, o.plan_jobs = jobs, o.fork_plans_from_s = 0;
    try {
      run_search(kTiny, {"cluster.hbm_gib=0.0009765625"}, o);
    } catch (const Error& e) {
      messages[jobs == 1 ? 0 : 1] = e.what();
    }
  }
  EXPECT_FALSE(messages[0].empty());
  EXPECT_EQ(messages[0], messages[1]);
}

// The estimate over several processes (SearchOptions::estimate_jobs: the space dealt by pipeline
// group, the shares beyond the first in forked children, merged as rank 0 merges MPI ranks'
// shares) against one process: the same JSON (timings aside: every count, rule example, probe
// count, the K best and their estimates), with --vary-batch too, and the same message where no
// strategy is valid.
TEST(SearchShortcuts, EstimateSharesChangeNothing) {
  for (const bool vary : {false, true}) {
    std::string texts[3];
    for (int jobs : {1, 2, 3}) {
      SearchOptions o;
      o.gpus = vary ? 16 : 8, o.top = 16, o.simulate = false, o.vary_batch = vary, o.estimate_jobs = jobs;
      const SearchResult r = run_search(kTiny, {}, o);
      EXPECT_GT(r.valid, 0u);
      texts[jobs - 1] = json_without_timings(r);
    }
    EXPECT_EQ(texts[0], texts[1]) << "vary_batch " << vary;
    EXPECT_EQ(texts[0], texts[2]) << "vary_batch " << vary;
  }
  std::string messages[2];
  for (int jobs : {1, 2}) {
    SearchOptions o;
    o.gpus = 7, o.top = 16, o.simulate = false, o.estimate_jobs = jobs;
    try {
      run_search(kTiny, {}, o);
    } catch (const Error& e) {
      messages[jobs - 1] = e.what();
    }
  }
  EXPECT_NE(messages[0].find("no valid strategy"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[0], messages[1]);
}

// The counts of refused keys in closed form (SearchOptions::closed_form_counts: the points of a
// refused layout or split whose verdict an earlier point took from the loader counted per block of
// switch settings, per row, or per pipeline group, search_run.cc count_group) against the visit of
// every point with the same shortcuts: the same JSON (timings aside: every count by rule, every
// rule's example of the lowest enumeration order, the valid points and the K best), on the tiny
// GPT's whole space on 8 GPUs (every axis searched), on 16 GPUs with every global batch, with
// fixed keys (a fixed micro-batch and switch: groups of one micro-batch and four settings), over
// two estimate shares, and the same message where no strategy is valid (7 GPUs).
TEST(SearchShortcuts, ClosedFormCountsEqualTheVisitedCounts) {
  struct Case {
    std::vector<std::string> sets;
    int gpus;
    bool vary;
    int jobs;
  };
  const Case cases[] = {{{}, 8, false, 1},
                        {{"strategy.recompute=none", "strategy.offload=none"}, 16, true, 1},
                        {{"strategy.micro_batch=1", "software.tp_comm_overlap=false"}, 8, false, 1},
                        {{}, 8, false, 2}};
  for (const Case& k : cases) {
    std::string texts[2];
    for (const bool closed_form : {false, true}) {
      SearchOptions o;
      o.gpus = k.gpus, o.top = 16, o.simulate = false, o.vary_batch = k.vary, o.estimate_jobs = k.jobs;
      o.closed_form_counts = closed_form;
      const SearchResult r = run_search(kTiny, k.sets, o);
      uint64_t invalid = 0;
      for (const auto& [rule, count] : r.invalid) invalid += count.count;
      EXPECT_EQ(r.valid + invalid, r.points) << "closed form " << closed_form;
      texts[closed_form] = json_without_timings(r);
    }
    EXPECT_EQ(texts[0], texts[1]) << k.gpus << " GPUs, " << ::testing::PrintToString(k.sets) << ", " << k.jobs << " shares";
  }
  std::string messages[2];
  for (const bool closed_form : {false, true}) {
    SearchOptions o;
    o.gpus = 7, o.top = 16, o.simulate = false, o.closed_form_counts = closed_form;
    try {
      run_search(kTiny, {}, o);
    } catch (const Error& e) {
      messages[closed_form] = e.what();
    }
  }
  EXPECT_NE(messages[0].find("no valid strategy"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[0], messages[1]);
}

// The walk and the simulations together (SearchOptions::overlap: plans and simulations share the
// process slots, a point simulated by the child that planned it) against the walk first and the
// simulations after it: the same JSON (timings aside: every count, the K best with their simulated
// times and planned peaks, ties), where out-of-memory points lie between fitting ones (1.61 MB of
// HBM) and at 80 GB, with plans forked from the first and planned here, and the same message where
// nothing fits.
TEST(SearchShortcuts, OverlapChangesNothing) {
  const std::vector<std::string> fixed = {"strategy.recompute=none", "strategy.offload=none",
                                          "software.overlap_param_gather=false", "software.tp_comm_overlap=false"};
  for (const char* hbm : {"cluster.hbm_gib=0.0015", ""}) {
    std::vector<std::string> sets = fixed;
    if (*hbm) sets.push_back(hbm);
    for (double fork_from : {0.0, 0.1}) {
      std::string texts[2];
      for (bool overlap : {false, true}) {
        SearchOptions o;
        o.gpus = 8, o.top = 6, o.jobs = 2, o.overlap = overlap, o.fork_plans_from_s = fork_from;
        const SearchResult r = run_search(kTiny, sets, o);
        ASSERT_EQ(r.best.size(), 6u);
        for (const RankedPoint& p : r.best) EXPECT_EQ(p.simulated.status, sweep::PointStatus::kOk) << p.simulated.reason;
        if (*hbm) {
          EXPECT_GT(r.out_of_memory, 0u) << "no out-of-memory point between the fitting ones";
        }
        texts[overlap ? 1 : 0] = json_without_timings(r);
      }
      EXPECT_EQ(texts[0], texts[1]) << hbm << " fork_plans_from_s " << fork_from;
    }
  }
  std::string messages[2];
  for (bool overlap : {false, true}) {
    SearchOptions o;
    o.gpus = 1, o.top = 4, o.jobs = 2, o.overlap = overlap, o.fork_plans_from_s = 0;
    try {
      run_search(kTiny, {"cluster.hbm_gib=0.0009765625"}, o);
    } catch (const Error& e) {
      messages[overlap ? 1 : 0] = e.what();
    }
  }
  EXPECT_NE(messages[0].find("fits nowhere"), std::string::npos) << messages[0];
  EXPECT_EQ(messages[0], messages[1]);
}

}  // namespace
}  // namespace tandem::search
