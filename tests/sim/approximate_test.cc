// The approximate tier (SimOptions::approximate, `tandem sim --approximate`, docs/sim.md
// "Approximate tier"): a folded run whose lanes part is kept instead of being run again less
// folded. Where no lane parts it is the exact run, byte for byte; where lanes part the result says
// it is approximate and its error is within the bound the docs derive: the simulated time the
// partings lasted (SimResult::parted_window_s).
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "shared/schedule.h"
#include "sim/forked_call.h"
#include "sim/sim_report.h"
#include "sim/simulation.h"

namespace tandem::sim::testing {
namespace {

struct Output {
  SimResult result;
  std::string json;  // whole, `simulator` included
  std::string summary;
  std::string trace;
};

Output run(const Schedule& s, SimOptions o, const std::string& name) {
  o.trace_path = ::testing::TempDir() + "approximate_" + std::to_string(getpid()) + "_" + name + ".trace";
  Output out;
  out.result = simulate(s, o);
  std::ostringstream j, t;
  write_json(j, s, out.result);
  write_summary(t, s, out.result);
  out.json = j.str();
  out.summary = t.str();
  std::ifstream in(o.trace_path, std::ios::binary);
  out.trace.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  std::remove(o.trace_path.c_str());
  return out;
}

Schedule tiny(const std::vector<std::string>& sets) {
  return Schedule(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
}

// Where no lane parts, the approximate tier takes exactly the exact path's run (the same
// simulation child, nothing else changed), so every output is the same, byte for byte, and it
// says nothing of an approximation. Layouts: the lane quotient with rings and with the tuner's
// trees on their own links (LaneQuotient.* in replica_fold_test.cc: dp 4 x tp 2 x pp 4 on nodes of
// 4), the same layout with the ring forced on dp 3 (ReplicaFolding.TreeAllReduce...), pure data
// parallelism (replica folding) and tensor parallelism alone.
TEST(ApproximateTier, ExactWhereNoLaneParts) {
  const std::vector<std::vector<std::string>> layouts = {
      {"cluster.gpus=32", "cluster.gpus_per_node=4", "cluster.nics_per_node=4", "strategy.tp=2", "strategy.pp=4",
       "strategy.global_batch=32", "strategy.zero_stage=1"},
      {"cluster.gpus=24", "cluster.gpus_per_node=2", "strategy.tp=2", "strategy.pp=4", "strategy.global_batch=24"},
      {"cluster.gpus=8", "cluster.gpus_per_node=4", "strategy.global_batch=16"},
      {"cluster.gpus=8", "cluster.gpus_per_node=2", "strategy.tp=2", "strategy.pp=4", "strategy.global_batch=8"}};
  for (size_t i = 0; i < layouts.size(); ++i) {
    const Schedule s = tiny(layouts[i]);
    SimOptions exact;
    if (i == 1) exact.algorithm = Algorithm::kRing;
    SimOptions approx = exact;
    approx.approximate = true;
    const Output e = run(s, exact, "exact"), a = run(s, approx, "approx");
    EXPECT_TRUE(e.result.fold_exact) << i;
    EXPECT_FALSE(a.result.approximate) << i;
    EXPECT_EQ(a.result.parted_meetings, 0u) << i;
    EXPECT_EQ(e.json, a.json) << i;
    EXPECT_EQ(e.summary, a.summary) << i;
    EXPECT_TRUE(e.trace == a.trace) << i;
    EXPECT_EQ(a.json.find("\"approximate\""), std::string::npos) << i;
    EXPECT_EQ(a.summary.find("APPROXIMATE"), std::string::npos) << i;
  }
}

// Where lanes part: dp 3 x tp 2 x pp 4 on nodes of 2 with NCCL's tree forced (3 replicas: heap
// tree 0 -> 1, 2, its mirror 2 -> 1, 0; replica 1 has two tree flows on each NIC link, replicas 0
// and 2 three, so a pipeline message meeting the tree gets a different share on each replica:
// ReplicaFolding.TreeAllReducePartsReplicasAndFoldsTpLanesOnly). The exact path ends folded by
// replica classes ({0,2} {1}: 2 replicas x 2 tp lanes = 4 ranks in the widest state; before
// session 12, tp-folded, 2); the approximate tier keeps the first, grid-folded run (6 a state) and says
// so. The bound (docs/sim.md "Approximate tier"): before the first parting both runs are the same
// run (the quotient is exact while the flows in flight are symmetric); a parting changes only the
// rates of the flows on the links the asymmetric op shares, and only until that op's phase ends;
// a flow that moved at a rate r' instead of r during a window of length w is left |r - r'| w
// bytes apart, which it makes up at its rate after the window, at least max(r, r') once the
// asymmetric op's flows have left its links, so in at most w. Every task's end, and the iteration
// time, is then within the summed windows W = parted_window_s of the exact one.
// (grad_reduce_overlap: the gradient all-reduces meet the pipeline messages during the backward,
// as in ReplicaFolding.TreeAllReducePartsReplicasAndFoldsTpLanesOnly.)
TEST(ApproximateTier, TreePartingWithinTheSummedWindows) {
  const Schedule s = tiny({"cluster.gpus=24", "cluster.gpus_per_node=2", "strategy.tp=2", "strategy.pp=4",
                           "strategy.global_batch=24", "software.grad_reduce_overlap=true"});
  SimOptions exact;
  exact.algorithm = Algorithm::kTree;
  SimOptions approx = exact;
  approx.approximate = true;
  const Output e = run(s, exact, "tree_exact"), a = run(s, approx, "tree_approx");
  EXPECT_EQ(e.result.fold, 4);
  EXPECT_TRUE(e.result.fold_exact);
  EXPECT_FALSE(e.result.approximate);
  EXPECT_EQ(a.result.fold, 6);
  EXPECT_TRUE(a.result.approximate);
  EXPECT_GT(a.result.parted_meetings, 0u);
  EXPECT_GT(a.result.parted_window_s, 0);
  EXPECT_FALSE(a.trace.empty()) << "the approximate run writes its trace";
  EXPECT_NE(a.json.find("\"approximate\": {"), std::string::npos);
  EXPECT_NE(a.summary.find("APPROXIMATE (--approximate)"), std::string::npos);
  EXPECT_NE(a.summary.find("(approximate)"), std::string::npos);
  const double w = a.result.parted_window_s;
  EXPECT_LE(std::abs(a.result.iteration_time_s - e.result.iteration_time_s), w);
  ASSERT_EQ(a.result.ranks.size(), e.result.ranks.size());
  for (size_t r = 0; r < a.result.ranks.size(); ++r) {
    EXPECT_LE(std::abs(a.result.ranks[r].end_s - e.result.ranks[r].end_s), w) << r;
    EXPECT_EQ(a.result.ranks[r].peak_device_bytes, e.result.ranks[r].peak_device_bytes) << r;
  }
  // The flows are the same flows; fewer of them go to SimGrid.
  EXPECT_EQ(a.result.flows, e.result.flows);
  EXPECT_LT(a.result.simgrid_flows, e.result.simgrid_flows);
}

// In the calling process (isolate = false) an exact run that parts is an error
// (ReplicaFolding.InProcessRunThatPartsIsAnError); the approximate tier returns it, marked.
TEST(ApproximateTier, InProcessRunThatPartsIsKept) {
  const Schedule s = tiny({"cluster.gpus=24", "cluster.gpus_per_node=2", "strategy.tp=2", "strategy.pp=4",
                           "strategy.global_batch=24", "software.grad_reduce_overlap=true"});
  SimOptions o;
  o.algorithm = Algorithm::kTree;
  o.approximate = true;
  o.isolate = false;
  const std::string got = forked_call(
      [&] {
        const SimResult r = simulate(s, o);
        return std::string(r.approximate ? "approximate " : "exact ") + std::to_string(r.fold);
      },
      "test: in-process simulation");
  EXPECT_EQ(got, "approximate 6");
}

}  // namespace
}  // namespace tandem::sim::testing
