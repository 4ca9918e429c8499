// A host collective progresses only while its ranks do not compute (sim/host_collective_progress.h,
// issue 13): hand-built two-rank programs on the host cluster with a calibration profile whose
// times are round numbers; every expected time is derived in the comments. Each case is also run
// on a GPU cluster preset with the same profile, where a collective runs beside kernels.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <memory>
#include <string>

#include "sim/compute_cost_model.h"
#include "sim/simulation.h"
#include "host_profile_util.h"
#include "sim_test_util.h"
#include "traces/calibration/calibration_profile.h"
#include "traces/calibration/collective_probe_table.h"

namespace tandem::sim::testing {
namespace {

// A host profile: the GEMM 8x8x8 at 10 us, 1 us between kernels (so 11 us a GEMM); the all-reduce
// of 2 ranks (data-parallel group) of 4096 B at 30 us and of 64 B at 5 us, no wait.
proto::CalibrationProfile gemm_profile() {
  Compute g;
  g.kernel = Kernel::kGemm;
  g.dtype = DType::kBf16;
  g.dims = {8, 8, 8, 0, 0, 0};
  return host_profile(g, 10e-6, 1e-6);
}

std::shared_ptr<const CalibrationTable> profile() {
  proto::CalibrationProfile p = gemm_profile();
  for (auto [bytes, s] : {std::pair<int64_t, double>{4096, 30e-6}, {64, 5e-6}}) {
    proto::CollectiveTime* c = p.add_collectives();
    c->set_op(uint32_t(CollectiveOp::kAllReduce));
    c->set_group_kind(uint32_t(GroupKind::kDp));
    c->set_group_size(2);
    c->set_bytes(bytes);
    c->set_mean_s(s);
    c->set_median_s(s);
    c->set_samples(1);
  }
  return std::make_shared<const CalibrationTable>(load_profile(p, "host-progress-test"));
}

// Both ranks run `build`; on the host preset or a GPU test preset. Returns the iteration time and
// the recorded end of task `watch` on rank 0.
std::pair<double, double> run(bool host, std::function<void(ProgramWriter&)> build, TaskId watch,
                              std::shared_ptr<const CalibrationTable> table = profile()) {
  ClusterSpec c = test_cluster(2);
  if (host) c.preset = "host";
  const Schedule s = make_schedule(c, 2, {{0, 1}, {0, 1}}, [build](int rank) {
    ProgramWriter w(rank);
    build(w);
    return w.p;
  });
  SimOptions o = ideal_options();
  o.calibration = std::move(table);
  o.record_tasks = true;
  o.fold_tensor_parallel = o.fold_data_parallel = false;
  const SimResult r = simulate(s, o);
  double end = -1;
  for (const TaskTiming& t : r.tasks)
    if (t.rank == 0 && t.task == watch) end = t.end_s;
  return {r.iteration_time_s, end};
}

TEST(HostCollectiveProgress, PausedFromItsStartWhileTheRanksCompute) {
  // Task 0: the 30 us all-reduce (grad-comm stream, no deps); task 1: a GEMM (11 us) beside it;
  // task 2: a GEMM that needs the all-reduce. Both ranks compute 0..11 us, so the all-reduce runs
  // 11..41 and the last GEMM 41..52 us. On a GPU preset it runs 0..30 beside the GEMM: 30 + 11 = 41.
  auto build = [](ProgramWriter& w) {
    const TaskId ar = w.collective(CollectiveOp::kAllReduce, 0, 4096, {}, Stream::kGradComm);
    w.gemm(8, 8, 8);
    w.gemm(8, 8, 8, {ar});
  };
  auto [host, host_ar] = run(true, build, 0);
  EXPECT_NEAR(host, 52e-6, 1e-12);
  EXPECT_NEAR(host_ar, 41e-6, 1e-12);
  auto [gpu, gpu_ar] = run(false, build, 0);
  EXPECT_NEAR(gpu, 41e-6, 1e-12);
  EXPECT_NEAR(gpu_ar, 30e-6, 1e-12);
}

TEST(HostCollectiveProgress, PausedMidWayByAKernelAndResumed) {
  // Task 0: the 30 us all-reduce (comm stream) and task 1: the 5 us all-reduce (grad-comm stream,
  // another group), both at 0 with nothing computing; task 2: a GEMM after the 5 us one, task 3: a
  // GEMM after the 30 us one. The small one ends at 5 us; the GEMM runs 5..16 and holds the large
  // one, which has 25 us left: it runs 16..41, and task 3 41..52 us. On a GPU preset the large
  // one ends at 30, task 3 runs 30..41.
  auto build = [](ProgramWriter& w) {
    const TaskId large = w.collective(CollectiveOp::kAllReduce, 0, 4096, {}, Stream::kComm);
    const TaskId small = w.collective(CollectiveOp::kAllReduce, 1, 64, {}, Stream::kGradComm);
    w.gemm(8, 8, 8, {small});
    w.gemm(8, 8, 8, {large});
  };
  auto [host, host_large] = run(true, build, 0);
  EXPECT_NEAR(host, 52e-6, 1e-12);
  EXPECT_NEAR(host_large, 41e-6, 1e-12);
  auto [gpu, gpu_large] = run(false, build, 0);
  EXPECT_NEAR(gpu, 41e-6, 1e-12);
  EXPECT_NEAR(gpu_large, 30e-6, 1e-12);
}

TEST(HostCollectiveProgress, OneComputingRankHoldsTheCollectiveForBoth) {
  // Rank 0 computes a GEMM (11 us) beside the 30 us all-reduce, rank 1 only posts it: the
  // all-reduce needs both to poll, so it runs 11..41 on both ranks (on a GPU preset 0..30).
  auto build = [](ProgramWriter& w) {
    w.collective(CollectiveOp::kAllReduce, 0, 4096, {}, Stream::kGradComm);
    if (w.p.rank == 0) w.gemm(8, 8, 8);
  };
  auto [host, host_ar] = run(true, build, 0);
  EXPECT_NEAR(host, 41e-6, 1e-12);
  EXPECT_NEAR(host_ar, 41e-6, 1e-12);
  auto [gpu, gpu_ar] = run(false, build, 0);
  EXPECT_NEAR(gpu, 30e-6, 1e-12);
  EXPECT_NEAR(gpu_ar, 30e-6, 1e-12);
}

// The same GEMM profile with no measured collective, and the 2-rank all-reduce of 1 KiB probed
// (traces/calibration/collective_probe_table.h) at 20 us back to back and at 60 us after a gap
// of 200 us (sim/host_collective_model.h: linear in the gap between them, 60 us past 200 us).
std::shared_ptr<const CalibrationTable> gap_profile() {
  proto::CalibrationProfile p = gemm_profile();
  add_collective_probe(p, {{CollectiveOp::kAllReduce, 2, 1024, 20e-6, 3, 0},
                           {CollectiveOp::kAllReduce, 2, 1024, 60e-6, 3, 200e-6}});
  return std::make_shared<const CalibrationTable>(load_profile(p, "host-gap-test"));
}

TEST(HostCollectiveGap, ACollectiveAfterComputeCostsTheProbeAfterThatGap) {
  // Tasks 0, 1: two 1 KiB all-reduces, the second after the first (gaps 0: 20 us each, 0..20 and
  // 20..40 us); tasks 2..11: ten GEMMs (11 us each) after them, 40..150 us; task 12: the all-reduce
  // after them, 150 - 40 = 110 us after the ranks' previous collective ended: 20 + (60 - 20) *
  // 110 / 200 = 42 us, so 150..192 us. Rank 1 computes two GEMMs fewer (arrives at 128 us, its gap
  // 88 us): the largest of the members' gaps is the last arrival's, 110 us, the same. On a GPU
  // preset the gap is not tracked: 20 us, 150..170.
  auto build = [](ProgramWriter& w) {
    const TaskId a = w.collective(CollectiveOp::kAllReduce, 0, 1024, {}, Stream::kGradComm);
    const TaskId b = w.collective(CollectiveOp::kAllReduce, 0, 1024, {a}, Stream::kGradComm);
    TaskId last = w.gemm(8, 8, 8, {b});
    for (int i = 1; i < (w.p.rank == 0 ? 10 : 8); ++i) last = w.gemm(8, 8, 8);
    w.collective(CollectiveOp::kAllReduce, 0, 1024, {last}, Stream::kGradComm);
  };
  auto [host, host_second] = run(true, build, 1, gap_profile());
  EXPECT_NEAR(host, 192e-6, 1e-12);
  EXPECT_NEAR(host_second, 40e-6, 1e-12);
  auto [gpu, gpu_second] = run(false, build, 1, gap_profile());
  EXPECT_NEAR(gpu, 170e-6, 1e-12);
  EXPECT_NEAR(gpu_second, 40e-6, 1e-12);
}

TEST(HostCollectiveGap, ACollectiveAfterALongStretchCostsTheLongestGapsTime) {
  // As above with twenty GEMMs (40..260 us): the last all-reduce comes 220 us after the previous
  // one, past the largest probed gap (200 us): 60 us, 260..320 us.
  auto build = [](ProgramWriter& w) {
    const TaskId a = w.collective(CollectiveOp::kAllReduce, 0, 1024, {}, Stream::kGradComm);
    const TaskId b = w.collective(CollectiveOp::kAllReduce, 0, 1024, {a}, Stream::kGradComm);
    TaskId last = w.gemm(8, 8, 8, {b});
    for (int i = 1; i < 20; ++i) last = w.gemm(8, 8, 8);
    w.collective(CollectiveOp::kAllReduce, 0, 1024, {last}, Stream::kGradComm);
  };
  EXPECT_NEAR(run(true, build, 1, gap_profile()).first, 320e-6, 1e-12);
}

}  // namespace
}  // namespace tandem::sim::testing
