// The space of `tandem search` on the tiny GPT (4 layers, 4 heads, global batch 8) on 8 GPUs, its
// invalid points counted by the rule the loader states, the rule text, the JSON, and bad input.
// Every count below is derived by hand from scenarios/tiny-gpt.textproto and the loader's rules
// (shared/strategy_rules.cc), not read from the program.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "search/point_check.h"
#include "search/search_report.h"
#include "search/search_run.h"
#include "search/search_space.h"
#include "shared/error.h"
#include "tests/shared/json_parse.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

// Everything fixed but the layout (dp x tp x pp) and the pipeline schedule.
const std::vector<std::string> kLayoutOnly = {
    "strategy.sp_mode=none",           "strategy.recompute=none",           "strategy.zero_stage=0",
    "strategy.micro_batch=1",          "software.grad_reduce_overlap=true", "software.overlap_param_gather=false",
    "software.tp_comm_overlap=false",  "strategy.tp_mode=1d",               "strategy.offload=none"};

// Everything fixed but the layout, the tensor-parallel mode with its depth, and offload.
const std::vector<std::string> kTensorModes = {
    "strategy.sp_mode=none",           "strategy.recompute=none",           "strategy.zero_stage=0",
    "strategy.micro_batch=4",          "software.grad_reduce_overlap=true", "software.overlap_param_gather=false",
    "software.tp_comm_overlap=false",  "strategy.pp_schedule=1f1b",         "strategy.virtual_stages=1"};

const char* kHeadsRule = "strategy.tp: tp = N must divide model.heads = N (each tensor-parallel rank must get whole heads)";
const char* kLayersRule =
    "strategy.pp: pp*virtual_stages = N*N = N must divide model.layers = N (every stage holds the same number of layers)";
const char* kInterleavedRule =
    "strategy.pp_schedule: interleaved runs several model chunks on each pipeline stage and needs pp >= 2, got pp = N "
    "(with one stage use gpipe or 1f1b and virtual_stages 1)";

TEST(SearchSpace, LayoutsAndPipelinesOfEightGpus) {
  // (tp, pp) with tp*pp | 8: tp 1 x pp {1,2,4,8}, tp 2 x {1,2,4}, tp 4 x {1,2}, tp 8 x {1}: 10.
  // Pipelines: 1f1b and gpipe, plus interleaved v in 2..8 with pp*v dividing 4 layers:
  // pp 1: v 2, 4; pp 2: v 2; pp 4, 8: none. Points: 4 x 4 + 3 x 3 + 2 x 2 + 1 x 2 = 31.
  SpaceShape shape;
  shape.gpus = 8, shape.layers = 4, shape.global_batch = 8;
  fix_keys(shape, kLayoutOnly);
  int points = 0, interleaved = 0;
  for_each_candidate(shape, [&](const Candidate& c) {
    ++points;
    EXPECT_EQ(c.dp * c.tp * c.pp * c.sp, 8);
    EXPECT_EQ(c.micro_batch, 0);  // fixed by the user: not set
    if (c.schedule >= 0 && std::string(kPipelineSchedules[c.schedule].value) == "interleaved") ++interleaved;
  });
  EXPECT_EQ(points, 31);
  EXPECT_EQ(interleaved, 4 * 2 + 3 * 1);
}

TEST(SearchSpace, FixedLayoutKeysRestrictTheLayouts) {
  SpaceShape shape;
  shape.gpus = 8, shape.layers = 4, shape.global_batch = 8;
  std::vector<std::string> sets = kLayoutOnly;
  sets.push_back("strategy.tp=2");
  fix_keys(shape, sets);
  int points = 0;
  for_each_candidate(shape, [&](const Candidate& c) {
    ++points;
    EXPECT_EQ(c.tp, 2);
  });
  // tp 2: pp 1 (4 pipelines), pp 2 (3), pp 4 (2).
  EXPECT_EQ(points, 9);
  EXPECT_THROW(fix_keys(shape, {"strategy.tp=two"}), Error);
}

TEST(SearchSpace, TensorModesDepthsAndOffload) {
  // (tp, pp) with tp*pp | 8: 10 layouts (above). tp_mode 1d at every tp; 2d, 2.5d and 3d at
  // tp > 1 only, 2.5d with each depth d >= 2 dividing tp: tp 1: 1 grid; tp 2: 1d, 2d, 2.5d/2, 3d
  // = 4; tp 4: 1d, 2d, 2.5d/2, 2.5d/4, 3d = 5; tp 8: 1d, 2d, 2.5d/2, /4, /8, 3d = 6. Offload
  // none, optimizer, params at each of the 2 fractions, auto (5): (4 x 1 + 3 x 4 + 2 x 5 + 1 x 6)
  // x 5 = 160 points.
  SpaceShape shape;
  shape.gpus = 8, shape.layers = 4, shape.global_batch = 8;
  fix_keys(shape, kTensorModes);
  int points = 0, depth_above_one = 0, params = 0;
  for_each_candidate(shape, [&](const Candidate& c) {
    ++points;
    EXPECT_EQ(c.dp * c.tp * c.pp * c.sp, 8);
    EXPECT_EQ(c.sp, 1);
    const std::string mode = kTpModes[c.tp_mode].value;
    if (mode != "2.5d") EXPECT_EQ(c.tp_depth, 1);
    else EXPECT_EQ(c.tp % c.tp_depth, 0);
    if (c.tp_depth > 1) ++depth_above_one;
    EXPECT_GE(c.offload, 0);
    // Every point sets the fraction: params each of kOffloadFractions, the others 0.
    EXPECT_EQ(c.offload_fraction > 0, std::string(kOffloads[c.offload].value) == "params");
    EXPECT_GE(c.offload_fraction, 0);
    if (std::string(kOffloads[c.offload].value) == "params") ++params;
  });
  EXPECT_EQ(points, 160);
  // 2.5d points: tp 2 x pp {1,2,4} (depth 2), tp 4 x pp {1,2} (2, 4), tp 8 (2, 4, 8): 3 + 4 + 3 = 10
  // layouts and depths, x 5 offloads.
  EXPECT_EQ(depth_above_one, 50);
  EXPECT_EQ(params, 32 * 2);  // the 32 grids above, each with the 2 fractions
}

TEST(SearchSpace, SequenceModesHaveTheirOwnAxis) {
  // 4 GPUs, tp 1 and pp 1 fixed: sp_mode none and megatron at sp 1; ulysses, ring_attention and
  // ring at each sp >= 2 dividing 4 (2, 4): 2 + 3 x 2 = 8 points.
  SpaceShape shape;
  shape.gpus = 4, shape.layers = 4, shape.global_batch = 8;
  std::vector<std::string> sets = kLayoutOnly;
  sets.erase(sets.begin());  // sp_mode searched
  for (const char* a : {"strategy.tp=1", "strategy.pp=1", "strategy.pp_schedule=1f1b", "strategy.virtual_stages=1"})
    sets.push_back(a);
  fix_keys(shape, sets);
  int points = 0, with_axis = 0;
  for_each_candidate(shape, [&](const Candidate& c) {
    ++points;
    EXPECT_EQ(c.dp * c.sp, 4);
    if (kSpModes[c.sp_mode].sp_degree) {
      ++with_axis;
      EXPECT_GE(c.sp, 2);
    } else {
      EXPECT_EQ(c.sp, 1);
    }
  });
  EXPECT_EQ(points, 8);
  EXPECT_EQ(with_axis, 6);
  // sp fixed at 2: only the modes with an axis remain (3 points).
  sets.push_back("strategy.sp=2");
  SpaceShape fixed_sp;
  fixed_sp.gpus = 4, fixed_sp.layers = 4, fixed_sp.global_batch = 8;
  fix_keys(fixed_sp, sets);
  points = 0;
  for_each_candidate(fixed_sp, [&](const Candidate& c) {
    ++points;
    EXPECT_EQ(c.sp, 2);
  });
  EXPECT_EQ(points, 3);
}

// A pipeline group's points in closed form (search/search_space.h PointGroup, which the search
// counts refused keys with): size() is the number of its points, point(row, m, s) walks them in the
// documented order (zero_stage outermost, then recompute, offload, micro_batch, the switches with
// the last innermost), and the groups' sizes add up to the points for_each_candidate visits. The
// tiny GPT on 8 GPUs, every axis searched; its first group (tp 1, pp 1, sp_mode none, 1f1b, dp 8:
// micro-batches up to 8 / 8 = 1) has 4 ZeRO stages x 3 recomputes x 5 offloads (none, optimizer,
// params 0.5 and 1.0, auto) x 1 micro-batch x 2^3 switch settings = 480 points.
TEST(SearchSpace, GroupsCountTheirPointsInClosedForm) {
  SpaceShape shape;
  shape.gpus = 8, shape.layers = 4, shape.global_batch = 8;
  uint64_t groups = 0, in_closed_form = 0, walked = 0, out_of_order = 0;
  for_each_group(shape, [&](const PointGroup& g) {
    if (groups++ == 0) {
      EXPECT_EQ(g.size(), 480u);
      EXPECT_EQ(g.head.tp * g.head.pp * g.head.sp, 1);
    }
    in_closed_form += g.size();
    const uint64_t settings = g.switch_settings();
    const size_t mbs = g.micro_batches.size();
    uint64_t i = 0;
    for (int zero : g.zeros)
      for (int recompute : g.recomputes)
        for (const auto& [offload, fraction] : g.offloads)
          for (int mb : g.micro_batches)
            for (int a : g.switches[0])
              for (int b : g.switches[1])
                for (int d : g.switches[2]) {
                  const Candidate c = g.point(i / (mbs * settings), size_t(i / settings % mbs), i % settings);
                  const bool same = c.zero == zero && c.recompute == recompute && c.offload == offload &&
                                    c.offload_fraction == fraction && c.micro_batch == mb && c.switches[0] == a &&
                                    c.switches[1] == b && c.switches[2] == d && c.dp == g.head.dp && c.tp == g.head.tp &&
                                    c.pp == g.head.pp && c.sp == g.head.sp && c.schedule == g.head.schedule;
                  out_of_order += !same;
                  ++i;
                }
    walked += i;
  });
  EXPECT_EQ(out_of_order, 0u);
  EXPECT_EQ(walked, in_closed_form);
  uint64_t visited = 0;
  for_each_candidate(shape, [&](const Candidate&) { ++visited; });
  EXPECT_EQ(visited, in_closed_form);
  EXPECT_GT(groups, 1u);
}

TEST(SearchSpace, CandidateSetsAreSetAssignments) {
  Candidate c;
  c.dp = 2, c.tp = 2, c.pp = 2, c.sp = 1, c.virtual_stages = 2, c.micro_batch = 4;
  c.tp_mode = 0, c.sp_mode = 1, c.schedule = 2, c.zero = 1, c.recompute = 2;
  c.switches[0] = 1, c.switches[1] = 0, c.switches[2] = -1;
  const std::vector<std::string> expected = {
      "strategy.dp=2",           "strategy.tp=2",         "strategy.pp=2",
      "strategy.sp=1",           "strategy.tp_mode=1d",   "strategy.sp_mode=megatron",
      "strategy.pp_schedule=interleaved", "strategy.virtual_stages=2", "strategy.zero_stage=1",
      "strategy.recompute=full", "strategy.micro_batch=4", "software.grad_reduce_overlap=true",
      "software.overlap_param_gather=false"};
  EXPECT_EQ(candidate_sets(c), expected);
  // offload params with its fraction, after the offload (kOffloads[2] is params).
  c.offload = 2, c.offload_fraction = 0.5;
  std::vector<std::string> with_params = expected;
  with_params.insert(with_params.begin() + 10, {"strategy.offload=params", "strategy.offload_fraction=0.5"});
  EXPECT_EQ(candidate_sets(c), with_params);
}

TEST(RuleOf, DropsOriginsAndValues) {
  EXPECT_EQ(rule_of("--set strategy.tp=8 (over s.textproto): strategy.tp: tp = 8 must divide model.heads = 4 "
                    "(s.textproto:13)"),
            "strategy.tp: tp = N must divide model.heads = N");
  EXPECT_EQ(rule_of("a.textproto:3: strategy.pp_schedule: interleaved needs pp >= 2, got pp = 1 (--set "
                    "strategy.pp=1 (over a.textproto))"),
            "strategy.pp_schedule: interleaved needs pp >= 2, got pp = N");
}

TEST(Search, InvalidPointsByRule) {
  SearchOptions o;
  o.gpus = 8;
  o.top = 2;
  o.simulate = false;
  const SearchResult r = run_search(kTiny, kLayoutOnly, o);
  // Of the 31 points (above): tp 8 does not divide 4 heads: its 4 points. pp 8 (tp 1) holds 8
  // stages of 4 layers: its 1f1b and gpipe points. Interleaved with pp 1 (tp 1, 2, 4; v 2 and 4):
  // 6 points. global_batch 8 is a multiple of dp * 1 for every dp of 8 GPUs, and the interleaved
  // points with pp 2 have 8/dp micro-batches (dp 4, 2, 1: 2, 4, 8), multiples of pp.
  EXPECT_EQ(r.points, 31u);
  ASSERT_EQ(r.invalid.size(), 3u);
  EXPECT_EQ(r.invalid.at(kHeadsRule).count, 4u);
  EXPECT_EQ(r.invalid.at(kLayersRule).count, 2u);
  EXPECT_EQ(r.invalid.at(kInterleavedRule).count, 6u);
  EXPECT_EQ(r.valid, 31u - 12u);
  EXPECT_EQ(r.gpus, 8);
  uint64_t pruned = 0;
  for (const auto& [rule, n] : r.pruned) pruned += n;
  // Every valid point is kept, pruned by a rule, or out of memory: none is lost.
  EXPECT_EQ(r.best.size() + pruned + r.out_of_memory, r.valid);
  EXPECT_EQ(r.best.size(), 2u);
  EXPECT_LE(r.best[0].estimate.iteration_s, r.best[1].estimate.iteration_s);
}

TEST(Search, TensorModesByRule) {
  // The 160 points of TensorModesDepthsAndOffload (micro_batch 4, 1f1b, ZeRO 0) through the
  // loader, whose rules run in this order (shared/strategy_rules.cc, then shared/offload_rules.cc
  // last), the layout and grid rules refusing all 5 offloads of a (layout, grid) alike:
  //   2d needs a square tp: tp 2 (pp 1, 2, 4) and tp 8: 4 grids = 20 points.
  //   2.5d needs tp = d q^2: tp 4 with d 2 (pp 1, 2) and tp 8 with d 4: 3 = 15 points.
  //   3d needs a cube tp: tp 2 (pp 1, 2, 4) and tp 4 (pp 1, 2): 5 = 25 points.
  //   1d tp 8 does not divide 4 heads: 5 points.  pp 8 does not divide 4 layers: 5 points.
  //   global_batch 8 a multiple of dp x 4 needs dp <= 2: of what passed so far, tp 1 x pp 1
  //   (1d), tp 1 x pp 2 (1d), tp 2 x pp 1 (1d, 2.5d/2): 4 = 20 points.
  //   2.5d needs q >= 2: tp 2 d 2 (pp 2, 4), tp 4 d 4 (pp 1, 2), tp 8 d 8: 5 = 25 points.
  //   The 9 grids left (micro_batch 4 a multiple of the grid rows: 2d tp 4 has 2, 2.5d tp 8 d 2
  //   has 4; 3d tp 8 splits it into q*q = 4 blocks, and hidden 64, ffn 256, vocab 256 and
  //   kv_heads*head_dim 64 into 4; layernorm): tp 1 x pp 4 (1d), tp 2 x pp 2 (1d), tp 2 x pp 4
  //   (1d), tp 4 x pp 1 (1d, 2d), tp 4 x pp 2 (1d, 2d), tp 8 x pp 1 (2.5d/2, 3d) pass with
  //   offload none and optimizer (18 valid). Params (2 fractions) and auto, 3 points a grid:
  //   Gemini has no pipeline: the 5 grids at pp > 1 = 15 points; then ZeRO-3 with dp > 1: tp 4 x
  //   pp 1 (dp 2; 1d, 2d) = 6 points; tp 8 x pp 1 (dp 1) passes: 6 valid.
  //   160 - 136 = 24 valid.
  SearchOptions o;
  o.gpus = 8;
  o.top = 4;
  o.simulate = false;
  const SearchResult r = run_search(kTiny, kTensorModes, o);
  EXPECT_EQ(r.points, 160u);
  // The seven rules above, and Gemini's two for each of params and auto.
  ASSERT_EQ(r.invalid.size(), 11u);
  EXPECT_EQ(r.invalid.at("strategy.tp: tp_mode 2d needs a q*q grid: tp = N is not a perfect square (try 1, 4, 9, 16, 64)")
                .count,
            20u);
  EXPECT_EQ(r.invalid.at("strategy.tp: tp_mode 2.5d needs tp = tp_depth*q*q: tp = N with tp_depth = N is not d times a "
                         "perfect square")
                .count,
            15u);
  EXPECT_EQ(r.invalid.at("strategy.tp: tp_mode 3d needs a q*q*q grid: tp = N is not a perfect cube (try 1, 8, 27, 64)")
                .count,
            25u);
  EXPECT_EQ(r.invalid.at(kHeadsRule).count, 5u);
  EXPECT_EQ(r.invalid.at(kLayersRule).count, 5u);
  EXPECT_EQ(r.invalid.at("strategy.global_batch: global_batch = N must be a multiple of dp*micro_batch = N*N = N (dp = N)")
                .count,
            20u);
  EXPECT_EQ(r.invalid.at("strategy.tp: tp_mode 2.5d needs a grid side q >= 2 (tp = tp_depth*q*q = N): with q = N the "
                         "depth layers only split the batch (use dp)")
                .count,
            25u);
  uint64_t pipeline = 0, zero3 = 0;
  for (const auto& [rule, n] : r.invalid) {
    if (rule.rfind("strategy.offload: offload ", 0) != 0) continue;
    if (rule.find("set strategy.pp=1") != std::string::npos) pipeline += n.count;
    if (rule.find("set strategy.zero_stage=3") != std::string::npos) zero3 += n.count;
  }
  EXPECT_EQ(pipeline, 15u);  // under two rules: "offload params ..." and "offload auto ..."
  EXPECT_EQ(zero3, 6u);
  EXPECT_EQ(r.valid, 24u);
}

TEST(Search, VaryBatchByRule) {
  // --vary-batch: global batch 1, 2, 4, 8 (the powers of two up to the scenario's 8), each with
  // the 31 points of kLayoutOnly (micro_batch 1): 124 points. Per batch g, of the 31: tp 8 (4
  // points, 4 heads) and pp 8 (2 points, 4 layers) whatever g; then global_batch must be a
  // multiple of dp (micro_batch 1); then interleaved needs pp >= 2, then g/dp micro-batches a
  // multiple of pp. The 25 points left after heads and layers, by layout (dp, points):
  // tp1 pp1 (8, 4), tp1 pp2 (4, 3), tp1 pp4 (2, 2), tp2 pp1 (4, 4), tp2 pp2 (2, 3), tp2 pp4
  // (1, 2), tp4 pp1 (2, 4), tp4 pp2 (1, 3).
  //   g 8: batch 0; interleaved at pp 1: 6; micro-batches 8/4, 8/2, 8/1 all even: 0; valid 19.
  //   g 4: batch: dp 8 (4); interleaved pp 1: tp2, tp4 (4); tp1 pp2 has 4/4 = 1 micro-batch (1);
  //        valid 16.
  //   g 2: batch: dp 8, 4 (4 + 3 + 4 = 11); interleaved pp 1: tp4 (2); tp2 pp2 has 2/2 = 1 (1);
  //        valid 11.
  //   g 1: batch: all but dp 1 (20); tp4 pp2 has 1 micro-batch (1); valid 4.
  SearchOptions o;
  o.gpus = 8;
  o.top = 2;
  o.simulate = false;
  o.vary_batch = true;
  const SearchResult r = run_search(kTiny, kLayoutOnly, o);
  EXPECT_EQ(r.points, 124u);
  EXPECT_EQ(r.valid, 19u + 16u + 11u + 4u);
  ASSERT_EQ(r.invalid.size(), 5u);
  EXPECT_EQ(r.invalid.at(kHeadsRule).count, 16u);
  EXPECT_EQ(r.invalid.at(kLayersRule).count, 8u);
  EXPECT_EQ(r.invalid.at("strategy.global_batch: global_batch = N must be a multiple of dp*micro_batch = N*N = N (dp = N)")
                .count,
            0u + 4u + 11u + 20u);
  EXPECT_EQ(r.invalid.at(kInterleavedRule).count, 6u + 4u + 2u);
  EXPECT_EQ(r.invalid
                .at("strategy.pp_schedule: interleaved needs micro-batches per iteration, global_batch/(dp*micro_batch) "
                    "= N/N = N, to be a multiple of pp = N")
                .count,
            3u);
  // Ranked by the estimate per sample.
  ASSERT_EQ(r.best.size(), 2u);
  EXPECT_LE(r.best[0].estimate.iteration_s / r.best[0].candidate.global_batch,
            r.best[1].estimate.iteration_s / r.best[1].candidate.global_batch);
  EXPECT_EQ(r.best[0].sets.back().rfind("strategy.global_batch=", 0), 0u);
  EXPECT_NE(search_json(r).find("\"ranked_by\":\"tokens_per_s\""), std::string::npos);

  // Simulated: best first by tokens/s.
  o.simulate = true;
  o.top = 3;
  o.jobs = 2;
  const SearchResult s = run_search(kTiny, kLayoutOnly, o);
  ASSERT_EQ(s.best.size(), 3u);
  for (size_t i = 1; i < s.best.size(); ++i)
    EXPECT_GE(s.best[i - 1].simulated.tokens_per_s, s.best[i].simulated.tokens_per_s);

  // A global batch fixed by --set cannot be searched.
  std::vector<std::string> fixed = kLayoutOnly;
  fixed.push_back("strategy.global_batch=8");
  try {
    run_search(kTiny, fixed, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("--vary-batch"), std::string::npos) << e.what();
  }
}

TEST(Search, JsonFields) {
  SearchOptions o;
  o.gpus = 8;
  o.top = 2;
  o.jobs = 2;
  const SearchResult r = run_search(kTiny, kLayoutOnly, o);
  const testing::JsonValue j = testing::parse_json(search_json(r));
  EXPECT_EQ(j.at("format").string, "tandem-search-1");
  EXPECT_EQ(j.at("ranked_by").string, "iteration_time_s");
  EXPECT_EQ(j.at("points").number, 31);
  EXPECT_EQ(j.at("valid").number, 19);
  EXPECT_EQ(j.at("invalid").at(kHeadsRule).number, 4);
  EXPECT_EQ(j.at("invalid").at(kLayersRule).number, 2);
  EXPECT_EQ(j.at("invalid").at(kInterleavedRule).number, 6);
  EXPECT_EQ(j.at("pruned").kind, testing::JsonValue::kObject);
  const auto& results = j.at("results").items;
  ASSERT_EQ(results.size(), 2u);
  double previous = 0;
  for (const testing::JsonValue& p : results) {
    EXPECT_EQ(p.at("status").string, "ok");
    const auto& sets = p.at("sets").items;
    ASSERT_FALSE(sets.empty());
    EXPECT_EQ(sets[0].string.rfind("strategy.dp=", 0), 0u);
    const double t = p.at("iteration_time_s").number;
    EXPECT_GT(t, 0);
    EXPECT_GE(t, previous);  // best first
    previous = t;
    EXPECT_GT(p.at("peak_memory_bytes").number, 0);
    // tokens/s = global batch x sequence / iteration time = 8 x 32 / t.
    EXPECT_NEAR(p.at("tokens_per_s").number, 8.0 * 32.0 / t, 1e-6 * 8.0 * 32.0 / t);
    EXPECT_EQ(p.at("iteration_time_interval_s").items.size(), 2u);
  }
}

TEST(Search, NoValidStrategyIsBadInput) {
  // 7 GPUs, everything else fixed (1f1b, micro_batch 1): tp 1 x pp 1 (dp 7: 8 is no multiple of
  // 7), tp 1 x pp 7 (7 stages of 4 layers), tp 7 (4 heads): 3 points, none valid.
  std::vector<std::string> sets = kLayoutOnly;
  sets.push_back("strategy.pp_schedule=1f1b");
  sets.push_back("strategy.virtual_stages=1");
  SearchOptions o;
  o.gpus = 7;
  o.simulate = false;
  try {
    run_search(kTiny, sets, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("no valid strategy for 7 GPUs: the loader refuses all 3 points"),
              std::string::npos)
        << e.what();
  }
}

TEST(Search, FitsNowhereIsBadInput) {
  // 1 MiB of HBM (cluster.hbm_gib = 1/1024): the tiny GPT's fp32 parameters alone are
  // 4 x 12 x 64^2 + 256 x 64 = 212,992 elements = 832 KiB, with gradients and Adam's two moments
  // (4 x 832 KiB) over 1 MiB on its one GPU.
  std::vector<std::string> sets = kLayoutOnly;
  sets.push_back("cluster.hbm_gib=0.0009765625");
  SearchOptions o;
  o.gpus = 1;
  o.simulate = false;
  try {
    run_search(kTiny, sets, o);
    FAIL() << "expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find("the model fits nowhere on 1 GPUs"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("GiB of HBM"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem::search
