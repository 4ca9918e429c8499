// The ranks' unequal speed on the host platform (sim/rank_speed_lag.h, issue 13): hand-built
// two-rank programs on the host cluster with a profile whose times are round numbers and whose
// ranks' speed spread is 4 %; every expected time is derived in the comments from the model,
// wait = max(0, s/2 L - d/2 - w), s = 0.04, w = 2 us (the profile's collective wait).
#include <gtest/gtest.h>

#include <functional>
#include <memory>

#include "sim/compute_cost_model.h"
#include "sim/rank_speed_lag.h"
#include "sim/simulation.h"
#include "host_profile_util.h"
#include "sim_test_util.h"
#include "traces/calibration/calibration_profile.h"

namespace tandem::sim::testing {
namespace {

constexpr double us = 1e-6;

// A host profile: the GEMM 8x8x8 at 10 us, no time between kernels; the all-reduce of 2 ranks
// (data-parallel group) of 4096 B at 30 us from the last arrival with a 2 us wait (so 32 us); the
// ranks' speed spread `spread`.
std::shared_ptr<const CalibrationTable> profile(double spread) {
  Compute g;
  g.kernel = Kernel::kGemm;
  g.dtype = DType::kBf16;
  g.dims = {8, 8, 8, 0, 0, 0};
  proto::CalibrationProfile p = host_profile(g, 10 * us, 0);
  proto::CollectiveTime* c = p.add_collectives();
  c->set_op(uint32_t(CollectiveOp::kAllReduce));
  c->set_group_kind(uint32_t(GroupKind::kDp));
  c->set_group_size(2);
  c->set_bytes(4096);
  c->set_mean_s(30 * us);
  c->set_median_s(30 * us);
  c->set_mean_wait_s(2 * us);
  c->set_samples(1);
  p.set_rank_speed_spread(spread);
  return std::make_shared<const CalibrationTable>(load_profile(p, "rank-speed-lag-test"));
}

// Rank r runs build(w, r) on the host preset; the iteration time.
double iteration(double spread, std::function<void(ProgramWriter&, int)> build) {
  ClusterSpec c = test_cluster(2);
  c.preset = "host";
  const Schedule s = make_schedule(c, 2, {{0, 1}}, [build](int rank) {
    ProgramWriter w(rank);
    build(w, rank);
    return w.p;
  });
  SimOptions o = ideal_options();
  o.calibration = profile(spread);
  o.fold_tensor_parallel = o.fold_data_parallel = false;
  return simulate(s, o).iteration_time_s;
}

// `n` GEMMs one after another, the first after `dep` (none: -1); the last one's id.
TaskId gemms(ProgramWriter& w, int n, TaskId dep = TaskId(-1)) {
  TaskId last = w.gemm(8, 8, 8, dep == TaskId(-1) ? std::vector<TaskId>{} : std::vector<TaskId>{dep});
  for (int i = 1; i < n; ++i) last = w.gemm(8, 8, 8, {last});
  return last;
}

TEST(RankSpeedLag, ACollectiveAfterLongComputeWaitsForTheSlowerRank) {
  // Both ranks: 100 GEMMs (1000 us), then the all-reduce. Identical ranks: 1000 + 32 = 1032 us.
  // With the spread: L = 1000 us since the step's start, d = 0: 0.02 x 1000 - 2 = 18 us later,
  // 1050 us.
  auto build = [](ProgramWriter& w, int) { w.collective(CollectiveOp::kAllReduce, 0, 4096, {gemms(w, 100)}); };
  EXPECT_NEAR(iteration(0, build), 1032 * us, 1e-12);
  EXPECT_NEAR(iteration(0.04, build), 1050 * us, 1e-12);
}

TEST(RankSpeedLag, TheDriftStartsAgainAtEachCollective) {
  // 50 GEMMs, all-reduce, 50 GEMMs after it, all-reduce. Each all-reduce comes 500 us after the
  // members' previous sync (the step's start, then the first all-reduce's end): 0.02 x 500 - 2 =
  // 8 us each: 500 + 8 + 32 + 500 + 8 + 32 = 1080 us, against 1064 us for identical ranks. (Counted
  // from the step's start instead, the second would wait 0.02 x 1040 - 2 = 18.8 us.)
  auto build = [](ProgramWriter& w, int) {
    const TaskId first = w.collective(CollectiveOp::kAllReduce, 0, 4096, {gemms(w, 50)});
    w.collective(CollectiveOp::kAllReduce, 0, 4096, {gemms(w, 50, first)});
  };
  EXPECT_NEAR(iteration(0, build), 1064 * us, 1e-12);
  EXPECT_NEAR(iteration(0.04, build), 1080 * us, 1e-12);
}

TEST(RankSpeedLag, ShortComputeKeepsTheProfilesOwnWait) {
  // 10 GEMMs (100 us) then the all-reduce: the drift 0.02 x 100 = 2 us is no more than the 2 us
  // the profile's collective already waits (a collective like the calibration run's own): 132 us
  // either way.
  auto build = [](ProgramWriter& w, int) { w.collective(CollectiveOp::kAllReduce, 0, 4096, {gemms(w, 10)}); };
  EXPECT_NEAR(iteration(0, build), 132 * us, 1e-12);
  EXPECT_NEAR(iteration(0.04, build), 132 * us, 1e-12);
}

TEST(RankSpeedLag, MembersThatArriveApartByTheirWorkWaitOnlyForWhatTheSpreadAdds) {
  // Rank 0: 100 GEMMs, rank 1: 60, then the all-reduce (stages of unequal work): they arrive at
  // 1000 and 600 us, d = 400 us. Whichever core is slower, rank 0 still arrives last: the expected
  // last arrival is 1000 us + max(0, 0.02 x 1000 - 400 / 2) = 1000 us, no wait added: 1032 us.
  // With 100 and 99 GEMMs (d = 10 us): 0.02 x 1000 - 5 - 2 = 13 us: 1045 us.
  auto apart = [](int rank0, int rank1) {
    return [=](ProgramWriter& w, int rank) {
      w.collective(CollectiveOp::kAllReduce, 0, 4096, {gemms(w, rank == 0 ? rank0 : rank1)});
    };
  };
  EXPECT_NEAR(iteration(0.04, apart(100, 60)), 1032 * us, 1e-12);
  EXPECT_NEAR(iteration(0, apart(100, 99)), 1032 * us, 1e-12);
  EXPECT_NEAR(iteration(0.04, apart(100, 99)), 1045 * us, 1e-12);
}

TEST(RankSpeedLag, TheDelayByHand) {
  // The class alone: s = 0.1, w = 1 us. Members 0 and 1 arriving at 300 and 340 us with no
  // previous collective: 0.05 x 340 - 20 - 1 < 0: none. Arriving at 340 us both: 0.05 x 340 - 1 =
  // 16 us. After a collective of units 0 and 1 that ended at 200 us: 0.05 x 140 - 1 = 6 us; a
  // collective of units 2 and 0 counts from the later of their previous collectives (unit 0's at
  // 200 us, unit 2 has none): 6 us too.
  CollectiveGaps gaps(3);
  const RankSpeedLag lag(0.1, 1 * us);
  EXPECT_EQ(lag.delay_s({{0, 0, 300 * us}, {1, 0, 340 * us}}, 340 * us, gaps), 0);
  EXPECT_NEAR(lag.delay_s({{0, 0, 340 * us}, {1, 0, 340 * us}}, 340 * us, gaps), 16 * us, 1e-15);
  gaps.ended({{0, 0, 150 * us}, {1, 0, 170 * us}}, 200 * us);
  EXPECT_NEAR(lag.delay_s({{0, 0, 340 * us}, {1, 0, 340 * us}}, 340 * us, gaps), 6 * us, 1e-15);
  EXPECT_NEAR(lag.delay_s({{2, 0, 340 * us}, {0, 0, 340 * us}}, 340 * us, gaps), 6 * us, 1e-15);
  EXPECT_NEAR(lag.delay_s({{2, 0, 340 * us}}, 340 * us, gaps), 16 * us, 1e-15);  // unit 2 alone: from 0
}

}  // namespace
}  // namespace tandem::sim::testing
