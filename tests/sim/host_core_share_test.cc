// Ranks that share cores (sim/host_core_share.h): processor sharing of the machine's cores among
// the units that compute, min(1, cores / threads computing) of a core each. Every expected time is
// derived in the comments from that law.
#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <memory>
#include <optional>
#include <tuple>
#include <vector>

#include "sim/host_core_share.h"
#include "sim/simulation.h"
#include "sim/timer_queue.h"
#include "host_profile_util.h"
#include "sim_test_util.h"

namespace tandem::sim {
namespace {

// Fires the share's timers in time order (as the replay's event loop does), starting the runs of
// `starts` (time, unit, work) when their time comes; returns each unit's end time.
std::map<int, double> run_share(HostCoreShare& share, TimerQueue& timers,
                                std::vector<std::tuple<double, int, double>> starts) {
  std::map<int, double> ends;
  size_t next = 0;
  while (next < starts.size() || !timers.empty()) {
    const double t_start = next < starts.size() ? std::get<0>(starts[next]) : HUGE_VAL;
    if (!timers.empty() && timers.top().t <= t_start) {
      const Timer t = timers.top();
      timers.pop();
      EXPECT_EQ(t.kind, Timer::kSharedComputeDone);
      if (const std::optional<Timer> run = share.done(t.first_task, t.t)) {
        EXPECT_EQ(run->kind, Timer::kComputeDone);
        EXPECT_EQ(run->target, t.target);
        ends[int(run->target)] = t.t;
      }
    } else {
      const auto [at, unit, work] = starts[next++];
      share.start(unit, work, uint32_t(unit) * 10, 1, at);
    }
  }
  return ends;
}

TEST(HostCoreShare, RanksThatFitTheCoresRunAlone) {
  // 2 units of 1 thread on 2 cores: 2 threads <= 2 cores, rate 1: each ends after its work.
  TimerQueue timers;
  HostCoreShare share(timers, 2, {1, 1});
  const auto ends = run_share(share, timers, {{0, 0, 10}, {0, 1, 7}});
  EXPECT_DOUBLE_EQ(ends.at(0), 10);
  EXPECT_DOUBLE_EQ(ends.at(1), 7);
}

TEST(HostCoreShare, FourRanksOnTwoCoresRunAtHalfSpeed) {
  // 4 units of 1 thread on 2 cores, 10 us of work each from 0: rate 2/4 = 1/2 throughout, all end
  // at 20 us.
  TimerQueue timers;
  HostCoreShare share(timers, 2, {1, 1, 1, 1});
  const auto ends = run_share(share, timers, {{0, 0, 10}, {0, 1, 10}, {0, 2, 10}, {0, 3, 10}});
  ASSERT_EQ(ends.size(), 4u);
  for (const auto& [unit, end] : ends) EXPECT_NEAR(end, 20, 1e-12) << "unit " << unit;
  EXPECT_EQ(share.running(), 0u);
}

TEST(HostCoreShare, TheRateChangesWhenARankStartsOrStops) {
  // 2 cores; units 0 and 1 start 10 us of work at 0, unit 2 at 5.
  //   [0, 5]: 2 threads, rate 1: units 0 and 1 have 5 left.
  //   from 5: 3 threads, rate 2/3: units 0 and 1 end at 5 + 5 / (2/3) = 12.5; unit 2 has done
  //           7.5 x 2/3 = 5 by then, 5 left.
  //   from 12.5: unit 2 alone, rate 1: ends at 17.5.
  TimerQueue timers;
  HostCoreShare share(timers, 2, {1, 1, 1});
  const auto ends = run_share(share, timers, {{0, 0, 10}, {0, 1, 10}, {5, 2, 10}});
  EXPECT_NEAR(ends.at(0), 12.5, 1e-12);
  EXPECT_NEAR(ends.at(1), 12.5, 1e-12);
  EXPECT_NEAR(ends.at(2), 17.5, 1e-12);
}

TEST(HostCoreShare, AFoldedUnitDemandsItsLanesThreads) {
  // 2 cores; unit 0 computes with 2 threads (two tensor-parallel lanes folded), unit 1 with 1:
  // 3 threads, rate 2/3. Unit 1's 4 us end at 6; unit 0 has done 6 x 2/3 = 4 of its 10, then runs
  // alone (2 threads <= 2 cores, rate 1): ends at 6 + 6 = 12.
  TimerQueue timers;
  HostCoreShare share(timers, 2, {2, 1});
  const auto ends = run_share(share, timers, {{0, 0, 10}, {0, 1, 4}});
  EXPECT_NEAR(ends.at(1), 6, 1e-12);
  EXPECT_NEAR(ends.at(0), 12, 1e-12);
}

TEST(HostCoreShare, ATimerOfAnEarlierRateIsStale) {
  // Unit 0's timer set at 10 (alone on 1 core) is stale once unit 1 starts at 5 (rate 1/2): done()
  // refuses it, and the current timer says 5 + 5 / (1/2) = 15 for unit 0.
  TimerQueue timers;
  HostCoreShare share(timers, 1, {1, 1});
  share.start(0, 10, 0, 1, 0);
  const Timer first = timers.top();
  timers.pop();
  EXPECT_DOUBLE_EQ(first.t, 10);
  share.start(1, 10, 10, 1, 5);
  EXPECT_FALSE(share.done(first.first_task, 10).has_value());
  EXPECT_DOUBLE_EQ(share.rate(), 0.5);
  const Timer current = timers.top();
  EXPECT_NEAR(current.t, 15, 1e-12);
  EXPECT_EQ(current.target, 0u);
  EXPECT_TRUE(share.done(current.first_task, current.t).has_value());
}

Compute gemm8() { return Compute{Kernel::kGemm, DType::kFp32, Phase::kForward, 0, -1, -1, {8, 8, 8, 0, 0, 0}, {}, {}}; }

TEST(HostCoreShare, TheReplaySharesTheCalibrationMachinesCores) {
  // Three host ranks with no communication: ranks 0 and 1 run one GEMM 8x8x8, rank 2 two. The
  // profile: the GEMM 10 us alone, 2 us between tasks (on the kernel's timer, before it), measured
  // with 1 BLAS thread per rank on 2 cores. Three ranks need 3 threads on 2 cores:
  //   from 0: three runs of 12 us at rate 2/3: all three end at 18 us. A rank off its core makes no
  //           progress and its kernel runs whole when it runs (docs/exec.md "Session 19"): the 6 us
  //           beyond the run's cost are a wait before it, its gap [6, 8] and its kernel [8, 18].
  //   from 18: rank 2's second run alone, rate 1: gap [18, 20], kernel [20, 30].
  // The iteration: 30 us. The same profile without its placement (cores 0): no sharing, every run
  // 12 us: ranks 0 and 1 end at 12, rank 2 at 24.
  const Schedule schedule = testing::host_schedule(3, [](int rank) {
    testing::ProgramWriter w(rank);
    for (int i = 0; i < (rank == 2 ? 2 : 1); ++i) w.add(Stream::kCompute, gemm8());
    return w.p;
  });
  proto::CalibrationProfile p = testing::host_profile(gemm8(), 10e-6, 2e-6);
  const double us = 1e-6;
  for (bool placed : {false, true}) {
    if (placed) p.set_blas_threads_per_rank(1), p.set_cores(2);
    auto table = std::make_shared<const CalibrationTable>(testing::load_profile(p, "host-core-share"));
    EXPECT_EQ(table->shares_cores(3), placed);
    for (bool fuse : {false, true}) {
      const SimResult r = testing::simulate_calibrated(schedule, table, fuse);
      EXPECT_NEAR(r.iteration_time_s, (placed ? 30 : 24) * us, 1e-12) << "placed " << placed << " fuse " << fuse;
      ASSERT_EQ(r.tasks.size(), 4u);
      for (const TaskTiming& t : r.tasks) {
        double start = placed ? 8 : 2, end = placed ? 18 : 12;
        if (t.rank == 2 && t.task == 1) start = placed ? 20 : 14, end = placed ? 30 : 24;
        EXPECT_NEAR(t.start_s, start * us, 1e-12) << "rank " << t.rank << " task " << t.task << " placed " << placed;
        EXPECT_NEAR(t.end_s, end * us, 1e-12) << "rank " << t.rank << " task " << t.task << " placed " << placed;
      }
    }
  }
}

TEST(HostCoreShare, ACollectiveOfRanksThatShareTheCoresTakesTheProbeOfThatPlacement) {
  // Four host ranks each issue one all-reduce of 16 KiB over all four, nothing else. The profile's
  // collective probe (4 ranks, a core each): 10 us; its probe with 4 ranks sharing the cores
  // (CalibrationProfile.shared_collective_probe, the ranks yielding while they wait): 90 us; no
  // measured collective, so no wait is added (mean_collective_wait_s 0). Calibrated on 2 cores
  // (1 BLAS thread per rank), 4 ranks share them: the iteration is the shared probe's 90 us; on 4
  // cores they fit: the probe's 10 us; the profile without the shared probe: 10 us either way.
  const Schedule schedule = testing::make_schedule(
      [] {
        ClusterSpec c = testing::test_cluster(4);
        c.preset = "host";
        return c;
      }(),
      4, {{0, 1, 2, 3}}, [](int rank) {
        testing::ProgramWriter w(rank);
        w.collective(CollectiveOp::kAllReduce, 0, 16384);
        return w.p;
      });
  auto probe = [](google::protobuf::RepeatedPtrField<proto::CollectiveProbe>* to, double seconds) {
    proto::CollectiveProbe* e = to->Add();
    e->set_op(uint32_t(CollectiveOp::kAllReduce));
    e->set_group_size(4);
    e->set_bytes(16384);
    e->set_time_s(seconds);
    e->set_reps(1);
  };
  const double us = 1e-6;
  for (bool shared_probe : {false, true})
    for (int cores : {2, 4}) {
      proto::CalibrationProfile p = testing::host_profile(gemm8(), 10e-6, 0);
      p.set_blas_threads_per_rank(1);
      p.set_cores(uint32_t(cores));
      probe(p.mutable_collective_probe(), 10 * us);
      if (shared_probe) {
        probe(p.mutable_shared_collective_probe(), 90 * us);
        p.set_shared_probe_ranks(4);
      }
      SimOptions o = testing::ideal_options();
      o.calibration = std::make_shared<const CalibrationTable>(testing::load_profile(p, "host-shared-probe"));
      const SimResult r = simulate(schedule, o);
      const double want = shared_probe && cores == 2 ? 90 * us : 10 * us;
      EXPECT_NEAR(r.iteration_time_s, want, 1e-12) << "shared probe " << shared_probe << ", " << cores << " cores";
    }
}

}  // namespace
}  // namespace tandem::sim
