// The wall-time estimate (sim/sim_time_estimate.h): its terms on counts derived by hand, the
// refusal over --max-time, and the durations a user writes.
#include "sim/sim_time_estimate.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>

#include "shared/error.h"
#include "shared/scenario.h"
#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::sim {
namespace {

// tiny-gpt (4 layers, 337 tasks a rank at one micro-batch per rank) on 256 GPUs, pure data
// parallelism: one rank class, two gradient all-reduces over all 256 GPUs, which span nodes.
TEST(SimTimeEstimate, TermsOnTinyGptDataParallel) {
  const Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto",
                                 {"cluster.gpus=256", "strategy.global_batch=512"}));
  const SimWork w = count_sim_work(s, SimOptions{});
  EXPECT_EQ(w.world, 256);
  EXPECT_EQ(w.units, 1);  // replica folding: the 256 replicas are one replayed state
  // 337 tasks + the Alloc and Free of the loss's fp32 logits copy (software.cross_entropy_fp32 of
  // the default preset; one micro-batch a rank).
  EXPECT_EQ(w.class_tasks, 339);
  EXPECT_EQ(w.replayed_tasks(), 339);
  EXPECT_DOUBLE_EQ(w.collective_square, 2.0 * 256 * 256);
  // 0.05 + 256 x 20 us + 339 x 1.1 us + 339 x 0.12 us + 2 x 256^2 x 5 us = 0.711 s; the run
  // (with 337 tasks a rank) measured 0.36 s of user CPU (docs/sim.md: the square term is fit at
  // 1024 GPUs).
  const TimeEstimate t = estimate_time(w, SimOptions{});
  EXPECT_NEAR(t.seconds, 0.05 + 256 * 20e-6 + 339 * 1.1e-6 + 339 * 0.12e-6 + 2.0 * 65536 * 5e-6, 1e-9);
  EXPECT_NEAR(t.seconds, 0.711, 0.001);
  // Without replica folding every replica is replayed: 86,784 tasks.
  SimOptions unfolded;
  unfolded.fold_data_parallel = false;
  EXPECT_EQ(count_sim_work(s, unfolded).replayed_tasks(), 256 * 339);
}

// The estimate follows the fold the planner takes (sim/fold_planner.h), not tp folding alone.
// tiny-gpt dp 16 x tp 2 on nodes of 2 GPUs with a NIC each (pp 1, so no group crosses stages):
// - grid folding: the 16 replicas' 2 tp lanes are one state (fold 32, one unit), and the lane
//   quotient (a NIC per GPU: stride 1) puts 1 / (dp x tp) = 1/32 of a symmetric op's flows in
//   SimGrid. A data-parallel group (16 members, one per node) is inside the unit; a launch carries
//   its 2 siblings (one per tp lane): per member 16 x 2 where unfolded it is 16, over 32^2;
// - without replica moves (fold_data_parallel off): tp folding (fold 2), each launch the 2 tp
//   lanes' data-parallel groups, and the flow quotient (k = 1 < tp) 1/2 of the flows: 16 x 2 / 2^2;
// - no folding: per member 16, as before.
TEST(SimTimeEstimate, FollowsTheFoldTaken) {
  const Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto",
                                 {"cluster.gpus=32", "cluster.gpus_per_node=2", "cluster.nics_per_node=2",
                                  "strategy.tp=2", "strategy.global_batch=32"}));
  SimOptions none;
  none.fold_tensor_parallel = none.fold_data_parallel = false;
  const SimWork u = count_sim_work(s, none);
  EXPECT_EQ(u.fold, 1);
  EXPECT_EQ(u.flow_quotient, 1);
  ASSERT_GT(u.collective_square, 0);
  // Every collective spanning nodes is a data-parallel one (16 members): a multiple of 32 x 16.
  const double per_member = u.collective_square / 32;
  EXPECT_EQ(std::fmod(per_member, 16.0), 0.0);

  const SimWork g = count_sim_work(s, SimOptions{});
  EXPECT_EQ(g.fold, 32);
  EXPECT_EQ(g.units, 1);
  EXPECT_EQ(g.flow_quotient, 32);
  EXPECT_EQ(g.replayed_tasks(), u.rank_tasks / 32);
  EXPECT_DOUBLE_EQ(g.collective_square, u.collective_square * 2 / (32.0 * 32.0));

  SimOptions tp_only;
  tp_only.fold_data_parallel = false;
  const SimWork t = count_sim_work(s, tp_only);
  EXPECT_EQ(t.fold, 2);
  EXPECT_EQ(t.units, 16);
  EXPECT_EQ(t.flow_quotient, 2);
  EXPECT_DOUBLE_EQ(t.collective_square, u.collective_square * 2 / 4.0);

  // The lane quotient off: the tp-only flow quotient under grid folding (1/2).
  SimOptions no_lanes;
  no_lanes.fold_lanes = false;
  const SimWork n = count_sim_work(s, no_lanes);
  EXPECT_EQ(n.fold, 32);
  EXPECT_EQ(n.flow_quotient, 2);
  EXPECT_DOUBLE_EQ(n.collective_square, u.collective_square * 2 / 4.0);
  // And the time: the square term follows (5 us a member^2, sim_time_estimate.cc).
  EXPECT_NEAR(estimate_time(u, none).seconds - estimate_time(g, SimOptions{}).seconds,
              0.12e-6 * double(u.rank_tasks - g.replayed_tasks()) +
                  5e-6 * (u.collective_square - g.collective_square),
              1e-9);
}

// The estimate's fold is the fold planner's (FoldPlanner::layout_fold: one statement of the
// layout conditions), checked against the fold the simulation takes on three layouts where the
// layout decides it:
// - tp 2 x pp 2 on nodes of 2 with the TP overlap's ring exchanges (dp 1: no replicas to fold):
//   tensor-parallel folding, fold 2 (the unit's NVLink ports carry only its own ring; the estimate
//   used to refuse folding under tp_comm_overlap, which the planner does not);
// - the same with dp 2 on nodes of 4 with one NIC and 2:1 oversubscribed one-node leaves (no
//   private routes: grid folding refused), tp 4: fold 4;
// - dp 4 x tp 2 on nodes of 2 (a replica is one node: grid folding), fold dp x tp = 8 (pp 1: with
//   pipeline stages the estimate counts the rerun wherever the tuner gives an all-reduce across
//   replicas the tree, CountsTheRerunWhereTheTreePartsTheLanes below).
TEST(SimTimeEstimate, AsksTheFoldPlanner) {
  const std::string tiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";
  const std::vector<std::string> overlap = {"strategy.sp_mode=megatron", "strategy.tp_comm_overlap=true"};
  struct Case {
    std::vector<std::string> sets;
    int nodes_per_leaf;
    int fold;
  };
  std::vector<Case> cases = {
      {{"cluster.gpus=4", "cluster.gpus_per_node=2", "strategy.tp=2", "strategy.pp=2", "strategy.global_batch=8"}, 0, 2},
      {{"cluster.gpus=16", "cluster.gpus_per_node=4", "cluster.nics_per_node=1", "cluster.oversubscription=2",
        "strategy.tp=4", "strategy.pp=2", "strategy.global_batch=32"},
       1,
       4},
      {{"cluster.gpus=8", "cluster.gpus_per_node=2", "strategy.tp=2", "strategy.global_batch=16"}, 0, 8},
  };
  cases[0].sets.insert(cases[0].sets.end(), overlap.begin(), overlap.end());
  cases[1].sets.insert(cases[1].sets.end(), overlap.begin(), overlap.end());
  for (const Case& c : cases) {
    SCOPED_TRACE(c.sets[0] + " " + c.sets[2]);
    const Schedule s(load_scenario(tiny, c.sets));
    SimOptions o;
    o.fabric.nodes_per_leaf = c.nodes_per_leaf;
    const SimWork w = count_sim_work(s, o);
    EXPECT_EQ(w.fold, c.fold);
    SimResult r;
    ASSERT_NO_THROW(r = simulate(s, o));
    EXPECT_EQ(r.fold, c.fold);
  }
}

TEST(SimTimeEstimate, RefusedOverTheLimitNamingTheFlag) {
  TimeEstimate t{7200, "what it counts"};
  ResourceLimit limit;  // one hour by default
  try {
    check_time_estimate(t, "tandem sim", limit);
    FAIL() << "two hours let through under a limit of one";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    // 2 h x 1.25 = 2.5, rounded up: 3h.
    EXPECT_STREQ(e.what(), "tandem sim would take about 2.0 h of wall time (what it counts), more than the limit of "
                           "60.0 min; raise it with --max-time DURATION (e.g. --max-time 3h; 0 for no limit) or "
                           "make the run smaller");
  }
  limit.max_time_s = 0;  // no limit
  EXPECT_NO_THROW(check_time_estimate(t, "tandem sim", limit));
  limit.max_time_s = 7200;
  EXPECT_NO_THROW(check_time_estimate(t, "tandem sim", limit));
}

TEST(SimTimeEstimate, Durations) {
  EXPECT_EQ(parse_duration("90", "--max-time"), 90);
  EXPECT_EQ(parse_duration("90s", "--max-time"), 90);
  EXPECT_EQ(parse_duration("30m", "--max-time"), 1800);
  EXPECT_EQ(parse_duration("30min", "--max-time"), 1800);
  EXPECT_EQ(parse_duration("2h", "--max-time"), 7200);
  EXPECT_EQ(parse_duration("1.5h", "--max-time"), 5400);
  EXPECT_EQ(parse_duration("0", "--max-time"), 0);
  for (const char* bad : {"", "-5", "2x", "h", "inf", "nan", "1e400", " 5", "5 h"}) {
    try {
      parse_duration(bad, "--max-time");
      FAIL() << "accepted '" << bad << "'";
    } catch (const Error& e) {
      EXPECT_EQ(std::string(e.what()), std::string("--max-time: expected a duration such as 90s, 30m, 2h or 0 (no "
                                                   "limit), got '") + bad + "'");
    }
  }
  EXPECT_THROW(parse_duration("8761h", "--max-time"), Error);
  EXPECT_EQ(format_duration(8.4), "8 s");
  EXPECT_EQ(format_duration(750), "12.5 min");
  EXPECT_EQ(format_duration(8280), "2.3 h");
}

// GPT-3 175B t8 p16 (docs/sim.md "Why lanes part", measured there) at 10,240 GPUs (dp 80) with
// NCCL's double binary tree forced for its all-reduces (the tuner that priced plans physically
// took it for the gradient all-reduce; NCCL 2.18's model, which the tuner now follows, gives the
// large ones the ring): the tree meets the pipeline messages on the NICs and parts the lanes, so
// the exact path runs again with one state per stage and class of replicas (docs/sim.md "Replica
// classes"): the estimate counts the equitable classes of the tree. The mirror j -> 79 - j swaps
// the heap tree and its mirror, whose channels share each node's one NIC of the group, so it maps
// the tree's flows onto themselves: the classes are at most the 40 mirror pairs, and refinement
// separates every pair (as on 7 and 8 nodes, tests/sim/replica_classes_test.cc, where the ranks
// alike by degree split): 16 stages x 40 = 640 states, 10,240 / 640 = 16 ranks a state on
// average. Without the replica-class fold the tp lanes alone (8 ranks a state, 1280 states). With
// --approximate the folded run is kept (dp x tp = 640 ranks a state).
TEST(SimTimeEstimate, CountsTheRerunWhereTheTreePartsTheLanes) {
  auto work = [](int gpus, bool approximate, bool classes = true) {
    const Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/gpt3-175b-a100.textproto",
                                   {"cluster.gpus=" + std::to_string(gpus),
                                    "strategy.global_batch=" + std::to_string(gpus * 3 / 2)}));
    SimOptions o;
    o.approximate = approximate;
    o.algorithm = Algorithm::kTree;
    o.fold_replica_classes = classes;
    return count_sim_work(s, o);
  };
  const SimWork tree = work(10240, false);
  EXPECT_EQ(tree.units, 640);
  EXPECT_EQ(tree.fold, 16);
  EXPECT_EQ(tree.flow_quotient, 8);  // tp 8 on DGX nodes (a NIC a GPU): the tp-only flow quotient
  const SimWork tp_only = work(10240, false, false);
  EXPECT_EQ(tp_only.fold, 8);
  EXPECT_EQ(tp_only.units, 1280);
  EXPECT_EQ(work(10240, true).fold, 80 * 8);
}

}  // namespace
}  // namespace tandem::sim
