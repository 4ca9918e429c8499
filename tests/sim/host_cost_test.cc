// The host twin's costs beyond kernels (issue 13): collectives a run lacks from the collective
// probe (sim/host_collective_model.h), the ranks' wait at a collective, and the host driver's
// Allocs and Frees (sim/host_memory_model.h) added to the next kernel (sim/program_info.cc). Every
// expected number is derived in the comments from the points the test makes.
#include <gtest/gtest.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <string>

#include "sim/compute_cost_model.h"
#include "sim/host_collective_model.h"
#include "sim/host_memory_model.h"
#include "sim/program_info.h"
#include "sim/simulation.h"
#include "host_profile_util.h"
#include "sim_test_util.h"
#include "traces/calibration/calibration_profile.h"
#include "traces/trace_builder.h"

namespace tandem::sim {
namespace {

TEST(HostCollectiveModel, InterpolatesTheProbeInLogLog) {
  // all-reduce over 2 ranks probed at 1 KiB 10 us and 4 KiB 20 us: between them a power law of
  // exponent log(20/10)/log(4) = 0.5, so 2 KiB takes 10 us * sqrt(2) = 14.142 us; below 1 KiB the
  // latency floor (10 us); above 4 KiB the last time scaled by bytes (8 KiB: 40 us). A wait of
  // 5 us is added to every one.
  const std::vector<ProbedCollective> probe{{CollectiveOp::kAllReduce, 2, 1024, 10e-6},
                                            {CollectiveOp::kAllReduce, 2, 4096, 20e-6}};
  const HostCollectiveModel m({}, probe, 5e-6);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 2048), 10e-6 * std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 4096), 20e-6, 1e-15);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 100), 10e-6, 1e-15);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 8192), 40e-6, 1e-15);
  EXPECT_NEAR(m.time_s(CollectiveOp::kAllReduce, 2, 2048), 10e-6 * std::sqrt(2.0) + 5e-6, 1e-15);
  EXPECT_TRUE(m.probed(CollectiveOp::kAllReduce, 2));
  EXPECT_FALSE(m.probed(CollectiveOp::kAllGather, 2));
}

TEST(HostCollectiveModel, InterpolatesInTheGapBetweenProbedGaps) {
  // all-reduce over 2 ranks probed at 1 KiB and 4 KiB after gaps 0 (10, 20 us), 2 ms (14, 40 us)
  // and 8 ms (20, 80 us). Size first at each gap (log-log as above: 2 KiB at gap g is
  // sqrt(t(1 KiB) t(4 KiB))), then linear in the gap between the probed gaps around it:
  //   1 KiB after 1 ms: halfway from 0 to 2 ms, (10 + 14) / 2 = 12 us;
  //   4 KiB after 5 ms: halfway from 2 to 8 ms, (40 + 80) / 2 = 60 us;
  //   2 KiB after 5 ms: (sqrt(14 * 40) + sqrt(20 * 80)) / 2 us;
  //   past 8 ms the 8 ms times (4 KiB 80 us; 8 KiB scaled by bytes, 160 us).
  std::vector<ProbedCollective> probe;
  for (auto [gap, t1, t4] : {std::array<double, 3>{0, 10e-6, 20e-6}, {2e-3, 14e-6, 40e-6}, {8e-3, 20e-6, 80e-6}}) {
    probe.push_back({CollectiveOp::kAllReduce, 2, 1024, t1, gap});
    probe.push_back({CollectiveOp::kAllReduce, 2, 4096, t4, gap});
  }
  const HostCollectiveModel m({}, probe, 5e-6);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 2048, 0), 10e-6 * std::sqrt(2.0), 1e-15);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 1024, 1e-3), 12e-6, 1e-15);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 4096, 5e-3), 60e-6, 1e-15);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 2048, 5e-3), (std::sqrt(560.0) + 40) / 2 * 1e-6, 1e-15);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 4096, 2e-3), 40e-6, 1e-15);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 4096, 30e-3), 80e-6, 1e-15);
  EXPECT_NEAR(m.transfer_s(CollectiveOp::kAllReduce, 2, 8192, 30e-3), 160e-6, 1e-15);
  EXPECT_NEAR(m.time_s(CollectiveOp::kAllReduce, 2, 4096, 5e-3), 65e-6, 1e-15);  // the wait added as before
  // A probe of gap 0 only (written before the gaps): every gap gets the back-to-back time.
  const HostCollectiveModel old({}, {probe[0], probe[1]});
  EXPECT_NEAR(old.transfer_s(CollectiveOp::kAllReduce, 2, 4096, 5e-3), 20e-6, 1e-15);
  // The profile's entries carry their gap.
  proto::CalibrationProfile p;
  proto::CollectiveProbe* c = p.add_collective_probe();
  c->set_op(uint32_t(CollectiveOp::kAllGather));
  c->set_group_size(2);
  c->set_bytes(64);
  c->set_time_s(3e-6);
  c->set_gap_s(2e-3);
  ASSERT_EQ(probed_collectives(p).size(), 1u);
  EXPECT_EQ(probed_collectives(p)[0].gap_s, 2e-3);
}

TEST(HostCollectiveModel, FallsBackToTheRunsSizeLaw) {
  // Nothing probed for 4 ranks or for all-gather: the size law over the run's own collectives.
  // all-reduce measured at 100 B 1 us and 10000 B 10 us: exponent 0.5, so 1e6 B takes 100 us.
  // all-gather measured at one size (2 us): exponent 0, 2 us at any size. reduce-scatter not
  // measured: the law pooled over the three points (ln-ln least squares through (ln 100, ln 1us),
  // (ln 1e4, ln 10us), (ln 1e3, ln 2us)), evaluated below by its own formula.
  std::map<int, std::vector<std::array<double, 3>>> measured;
  measured[int(CollectiveOp::kAllReduce)] = {{100, 1e-6, 1}, {1e4, 10e-6, 1}};
  measured[int(CollectiveOp::kAllGather)] = {{1e3, 2e-6, 1}};
  const std::vector<ProbedCollective> probe{{CollectiveOp::kAllReduce, 2, 1024, 10e-6}};
  const HostCollectiveModel m(measured, probe);
  EXPECT_NEAR(m.time_s(CollectiveOp::kAllReduce, 4, 1000000), 100e-6, 1e-12);
  EXPECT_NEAR(m.time_s(CollectiveOp::kAllGather, 2, 123456), 2e-6, 1e-15);
  const double x[3] = {std::log(100.0), std::log(1e4), std::log(1e3)};
  const double y[3] = {std::log(1e-6), std::log(10e-6), std::log(2e-6)};
  const double mx = (x[0] + x[1] + x[2]) / 3, my = (y[0] + y[1] + y[2]) / 3;
  double sxy = 0, sxx = 0;
  for (int i = 0; i < 3; ++i) sxy += (x[i] - mx) * (y[i] - my), sxx += (x[i] - mx) * (x[i] - mx);
  const double alpha = sxy / sxx;
  EXPECT_NEAR(m.time_s(CollectiveOp::kReduceScatter, 2, 5000), std::exp(my + alpha * (std::log(5000.0) - mx)), 1e-12);
}

TEST(HostCollectiveModel, MeanWaitIsWeightedBySamples) {
  // Two measured shapes: 3 instances waiting 10 us on average, 1 instance waiting 30 us:
  // (3 * 10 + 1 * 30) / 4 = 15 us per instance.
  proto::CalibrationProfile p;
  proto::CollectiveTime* a = p.add_collectives();
  a->set_samples(3);
  a->set_mean_wait_s(10e-6);
  proto::CollectiveTime* b = p.add_collectives();
  b->set_samples(1);
  b->set_mean_wait_s(30e-6);
  EXPECT_NEAR(mean_collective_wait_s(p), 15e-6, 1e-15);
  EXPECT_EQ(mean_collective_wait_s(proto::CalibrationProfile()), 0);
}

proto::MemoryOpTime* memory_op(proto::CalibrationProfile& p, bool alloc, int64_t bytes, double s, int samples) {
  proto::MemoryOpTime* m = p.add_memory_ops();
  m->set_alloc(alloc);
  m->set_bytes(bytes);
  m->set_mean_s(s);
  m->set_samples(uint32_t(samples));
  return m;
}

TEST(HostMemoryModel, FitsCallPlusFillBandwidth) {
  // Allocs of 1000 B at 2 us and 3000 B at 4 us lie on 1 us + 1 ns/B (a 1 GB/s fill): 5000 B take
  // 6 us. One Free size (0.5 us): a constant, whatever the size.
  proto::CalibrationProfile p;
  memory_op(p, true, 1000, 2e-6, 3);
  memory_op(p, true, 3000, 4e-6, 1);
  memory_op(p, false, 1000, 0.5e-6, 4);
  const HostMemoryModel m(p);
  EXPECT_NEAR(m.fit(true).fixed_s, 1e-6, 1e-12);
  EXPECT_NEAR(m.fit(true).s_per_byte, 1e-9, 1e-15);
  EXPECT_NEAR(m.time_s(true, 5000), 6e-6, 1e-12);
  EXPECT_NEAR(m.time_s(false, 1 << 20), 0.5e-6, 1e-12);
  EXPECT_TRUE(HostMemoryModel(proto::CalibrationProfile()).empty());
  EXPECT_EQ(HostMemoryModel(proto::CalibrationProfile()).time_s(true, 1000), 0);
}

Compute gemm(int64_t m, int64_t n, int64_t k) {
  return Compute{Kernel::kGemm, DType::kFp32, Phase::kForward, 0, -1, -1, {m, n, k, 0, 0, 0}, {}, {}};
}

// One host rank running three GEMMs 8x8x8 on its compute stream.
Schedule three_gemm8_on_one_host_rank() {
  return testing::host_schedule(1, [](int rank) {
    testing::ProgramWriter w(rank);
    for (int i = 0; i < 3; ++i) w.add(Stream::kCompute, gemm(8, 8, 8));
    return w.p;
  });
}

// A host profile: the GEMM 8x8x8 measured at 10 us, a time between kernels of 1 us, Allocs
// 1 us + 1 ns/B (2 us at 1000 B, 4 us at 3000 B), Frees 0.5 us.
CalibrationTable memory_profile_table() {
  proto::CalibrationProfile p = testing::host_profile(gemm(8, 8, 8), 10e-6, 1e-6);
  memory_op(p, true, 1000, 2e-6, 1);
  memory_op(p, true, 3000, 4e-6, 1);
  memory_op(p, false, 1000, 0.5e-6, 1);
  return testing::load_profile(p, "host-cost-test");
}

TEST(HostMemoryModel, AllocsAndFreesGoToTheNextKernel) {
  // A host profile: the GEMM 8x8x8 measured at 10 us, a time between kernels of 1 us, Allocs
  // 1 us + 1 ns/B, Frees 0.5 us. The program: Alloc a (1000 B, freed), Alloc p (persistent: never
  // freed), GEMM, Free a, GEMM. The first GEMM costs 10 + 1 + (1 + 1) = 13 us (a's Alloc; p's
  // costs nothing in a steady-state step), the second 10 + 1 + 0.5 = 11.5 us (a's Free).
  const CalibrationTable table = memory_profile_table();
  ClusterSpec cluster;
  cluster.preset = "host";
  const ComputeCostModel costs(cluster, KernelEfficiency{}, false, &table);

  Program prog;
  prog.rank = 0;
  for (int i = 0; i < 2; ++i) {
    Buffer b;
    b.id = BufferId(i);
    b.name = i == 0 ? "a" : "p";
    b.bytes = i == 0 ? 1000 : 1 << 20;
    prog.buffers.push_back(b);
  }
  auto add = [&](TaskOp op) {
    Task t;
    t.id = TaskId(prog.tasks.size());
    t.stream = Stream::kCompute;
    t.op = std::move(op);
    prog.tasks.push_back(std::move(t));
  };
  add(Alloc{0});
  add(Alloc{1});
  add(gemm(8, 8, 8));
  add(Free{0});
  add(gemm(8, 8, 8));
  const auto info = analyse_program(prog, costs);
  EXPECT_NEAR(info->cost_s[2], 13e-6, 1e-12);
  EXPECT_NEAR(info->cost_s[4], 11.5e-6, 1e-12);
}

TEST(HostMemoryModel, TheReplayRecordsTheirTimeOnTheAllocAndFreeTasks) {
  // The profile above; one rank of the host cluster runs: Alloc a (1000 B, freed), Alloc p
  // (persistent), GEMM 1, Free a, Alloc b (3000 B, freed), GEMM 2, Free b, all on the compute
  // stream. GEMM 1 runs a's Alloc first, then the 1 us between tasks: [0, 2] Alloc a, [2, 3] no
  // task, [3, 13] GEMM 1 (its 10 us). GEMM 2 runs a's Free and b's Alloc first, the gap, and b's
  // Free (after the last kernel) after it: [13, 13.5] Free a, [13.5, 17.5] Alloc b, [17.5, 18.5]
  // no task, [18.5, 28.5] GEMM 2, [28.5, 29] Free b. Alloc p takes no time ([0, 0]). By kind:
  // alloc 2 + 4 = 6 us, free 0.5 + 0.5 = 1 us, gemm 10 + 10 = 20 us, 2 us between tasks; the
  // iteration 29 us (the same total as when the memory time was recorded on the kernels: 13 + 16).
  auto table = std::make_shared<const CalibrationTable>(memory_profile_table());
  const Schedule schedule = testing::host_schedule(1, [](int rank) {
    testing::ProgramWriter w(rank);
    const BufferId a = w.buffer("a", 1000), p = w.buffer("p", 1 << 20), b = w.buffer("b", 3000);
    w.alloc(a);
    w.alloc(p);
    w.add(Stream::kCompute, gemm(8, 8, 8));
    w.free(a);
    w.alloc(b);
    w.add(Stream::kCompute, gemm(8, 8, 8));
    w.free(b);
    return w.p;
  });
  for (bool fuse : {false, true}) {
    const SimResult r = testing::simulate_calibrated(schedule, table, fuse);
    EXPECT_NEAR(r.iteration_time_s, 29e-6, 1e-12) << "fuse " << fuse;
    const double want[7][2] = {{0, 2}, {0, 0}, {3, 13}, {13, 13.5}, {13.5, 17.5}, {18.5, 28.5}, {28.5, 29}};
    ASSERT_EQ(r.tasks.size(), 7u);
    double alloc = 0, free = 0, kernel = 0;
    for (const TaskTiming& t : r.tasks) {
      ASSERT_LT(t.task, 7u);
      EXPECT_NEAR(t.start_s, want[t.task][0] * 1e-6, 1e-12) << "task " << t.task << " fuse " << fuse;
      EXPECT_NEAR(t.end_s, want[t.task][1] * 1e-6, 1e-12) << "task " << t.task << " fuse " << fuse;
      const double d = t.end_s - t.start_s;
      (t.task == 0 || t.task == 1 || t.task == 4 ? alloc : t.task == 3 || t.task == 6 ? free : kernel) += d;
    }
    EXPECT_NEAR(alloc, 6e-6, 1e-12);
    EXPECT_NEAR(free, 1e-6, 1e-12);
    EXPECT_NEAR(kernel, 20e-6, 1e-12);
  }
}

TEST(HostTaskGap, TheTimeBetweenTasksIsRecordedBeforeTheKernelNotInIt) {
  // A host profile: the GEMM 8x8x8 measured at 10 us, 2 us between tasks (task_overhead_s). One
  // rank runs three of these GEMMs on the compute stream. Each kernel is ready when the one before
  // ends and starts 2 us later: [2, 12], [14, 24], [26, 36]; every task lasts its 10 us measured,
  // the iteration 3 x (2 + 10) = 36 us (what it was when the gap was inside each kernel: 3 x 12).
  // A GEMM the profile does not hold (16x16x16, costed by the host compute model fit on the one
  // measured shape) gets the gap too: ComputeCostModel::gap_s is 2 us for both, and 0 without a
  // calibration. The kernel's own cost (time_s) is its measured 10 us: the gap is a cost apart, not
  // part of the kernel's time; the program analysis puts both on the kernel's timer (12 us).
  proto::CalibrationProfile p = testing::host_profile(gemm(8, 8, 8), 10e-6, 2e-6);
  auto table = std::make_shared<const CalibrationTable>(testing::load_profile(p, "host-gap-test"));
  ClusterSpec host_cluster;
  host_cluster.preset = "host";
  const ComputeCostModel costs(host_cluster, KernelEfficiency{}, false, table.get());
  EXPECT_NEAR(costs.gap_s(gemm(8, 8, 8)), 2e-6, 1e-15);
  EXPECT_NEAR(costs.time_s(gemm(8, 8, 8)), 10e-6, 1e-15);
  EXPECT_NEAR(costs.gap_s(gemm(16, 16, 16)), 2e-6, 1e-15);
  EXPECT_EQ(ComputeCostModel(host_cluster, KernelEfficiency{}, false).gap_s(gemm(8, 8, 8)), 0);

  const Schedule schedule = three_gemm8_on_one_host_rank();
  for (bool fuse : {false, true}) {
    const SimResult r = testing::simulate_calibrated(schedule, table, fuse);
    EXPECT_NEAR(r.iteration_time_s, 36e-6, 1e-12) << "fuse " << fuse;
    ASSERT_EQ(r.tasks.size(), 3u);
    for (const TaskTiming& t : r.tasks) {
      ASSERT_LT(t.task, 3u);
      EXPECT_NEAR(t.start_s, (2 + 12 * double(t.task)) * 1e-6, 1e-12) << "task " << t.task << " fuse " << fuse;
      EXPECT_NEAR(t.end_s - t.start_s, 10e-6, 1e-12) << "task " << t.task << " fuse " << fuse;
    }
  }
}

TEST(HostTaskGap, AKernelsTimeBeyondItsMedianRunsBeforeItAsTimeBetweenTasks) {
  // A host profile: the GEMM 8x8x8 with mean 12 us and median 10 us (three samples: one execution
  // of three stretched), 2 us between tasks. The kernel is costed at its typical execution, 10 us
  // = 12 x 10 / 12 (CalibrationTable::typical_fraction 10 / 12); the 2 us beyond it run before it
  // with the 2 us between tasks: gap_s 4 us. Its whole cost stays 14 us = 12 + 2, so three of them
  // on one rank take 42 us as before, each task [4, 14], [18, 28], [32, 42]. A GEMM the profile does
  // not hold (16x16x16, costed by the host model fit on the one shape at its mean) takes the
  // profile's pooled fraction, 3 x 10 / (3 x 12): time_s = host_time x 10/12, gap_s = 2 us +
  // host_time x 2/12. Without the median's part (mean = median) nothing moves: see the test above.
  proto::CalibrationProfile p = testing::host_profile(gemm(8, 8, 8), 12e-6, 2e-6);
  p.mutable_kernels(0)->set_median_s(10e-6);
  p.mutable_kernels(0)->set_samples(3);
  auto table = std::make_shared<const CalibrationTable>(testing::load_profile(p, "host-tail-test"));
  EXPECT_NEAR(table->typical_fraction(gemm(8, 8, 8)), 10.0 / 12, 1e-15);
  ClusterSpec host_cluster;
  host_cluster.preset = "host";
  const ComputeCostModel costs(host_cluster, KernelEfficiency{}, false, table.get());
  EXPECT_NEAR(costs.time_s(gemm(8, 8, 8)), 10e-6, 1e-15);
  EXPECT_NEAR(costs.gap_s(gemm(8, 8, 8)), 4e-6, 1e-15);
  const double host = table->host_time(gemm(16, 16, 16));
  ASSERT_GT(host, 0);
  EXPECT_NEAR(costs.time_s(gemm(16, 16, 16)), host * 10 / 12, 1e-15);
  EXPECT_NEAR(costs.gap_s(gemm(16, 16, 16)), 2e-6 + host * 2 / 12, 1e-15);
  // A GPU-style table (not a host profile) keeps its time whole.
  proto::CalibrationProfile gpu = p;
  gpu.set_backend("cuda");
  EXPECT_EQ(testing::load_profile(gpu, "host-tail-gpu").typical_fraction(gemm(8, 8, 8)), 1.0);

  const Schedule schedule = three_gemm8_on_one_host_rank();
  SimOptions o = testing::ideal_options();
  o.calibration = table;
  o.record_tasks = true;
  const SimResult r = simulate(schedule, o);
  EXPECT_NEAR(r.iteration_time_s, 42e-6, 1e-12);
  ASSERT_EQ(r.tasks.size(), 3u);
  for (const TaskTiming& t : r.tasks) {
    EXPECT_NEAR(t.start_s, (4 + 14 * double(t.task)) * 1e-6, 1e-12) << "task " << t.task;
    EXPECT_NEAR(t.end_s - t.start_s, 10e-6, 1e-12) << "task " << t.task;
  }
}

TEST(HostTaskGap, ASyntheticTraceCalibratesToItsKernelsAndItsGapAndPredictsItself) {
  // A measured host trace written by hand, one rank, everything on the compute stream: Alloc a and
  // Alloc b (1000 B each, both freed: steady-state Allocs), GEMMs 8x8x8 that take 10 us and
  // 16x16x16 that take 30 us, 2 us of the runtime's own time before every kernel (after the
  // kernel's Allocs/Frees, where the simulator puts it), Allocs 1 us, Frees 0.5 us:
  //   Alloc a [0, 1], gap [1, 3], GEMM8 [3, 13], gap [13, 15], GEMM16 [15, 45], Alloc b [45, 46],
  //   gap [46, 48], GEMM8 [48, 58], Free a [58, 58.5], gap [58.5, 60.5], GEMM16 [60.5, 90.5],
  //   Free b [90.5, 91].
  // Its iteration: 2 x 10 + 2 x 30 (kernels) + 4 x 2 (gaps) + 2 x 1 (Allocs) + 2 x 0.5 (Frees) = 91 us.
  // Calibration: GEMM8 10 us and GEMM16 30 us (mean = median, two samples each: the kernels'
  // own times, with no gap in them); the time between kernels from the three kernels that have a
  // previous one (the stream's first has no reference point): GEMM16 15 - 13 = 2, GEMM8 48 - 45 -
  // 1 (Alloc b) = 2, GEMM16 60.5 - 58 - 0.5 (Free a) = 2: 2 us over 3 samples. Allocs of 1000 B
  // 1 us, Frees 0.5 us. Predicted from that profile: the same layout, so the iteration is 91 us and
  // every kernel's predicted span its measured time.
  ClusterSpec cluster = testing::test_cluster(1);
  cluster.preset = "host";
  const Schedule schedule(testing::test_scenario(cluster), 1, {},
                          std::make_unique<testing::LambdaGenerator>([](int rank) {
                            testing::ProgramWriter w(rank);
                            const BufferId a = w.buffer("a", 1000), b = w.buffer("b", 1000);
                            w.alloc(a);                                // 0
                            w.add(Stream::kCompute, gemm(8, 8, 8));    // 1
                            w.add(Stream::kCompute, gemm(16, 16, 16)); // 2
                            w.alloc(b);                                // 3
                            w.add(Stream::kCompute, gemm(8, 8, 8));    // 4
                            w.free(a);                                 // 5
                            w.add(Stream::kCompute, gemm(16, 16, 16)); // 6
                            w.free(b);                                 // 7
                            return w.p;
                          }));
  const double us = 1e-6;
  const double measured[8][2] = {{0, 1}, {3, 13}, {15, 45}, {45, 46}, {48, 58}, {58, 58.5}, {60.5, 90.5}, {90.5, 91}};
  TraceBuilder builder(schedule, "host", "synthetic");
  builder.begin_rank(schedule.program(0));
  for (int t = 0; t < 8; ++t) builder.task(0, TaskId(t), measured[t][0] * us, measured[t][1] * us);
  const proto::Trace trace = builder.finish();

  const proto::CalibrationProfile p = make_calibration(schedule, trace, "synthetic.trace");
  ASSERT_EQ(p.kernels_size(), 2);
  for (const proto::KernelTime& k : p.kernels()) {
    const double want = k.dims(0) == 8 ? 10 * us : 30 * us;
    EXPECT_EQ(k.samples(), 2u) << k.label();
    EXPECT_NEAR(k.mean_s(), want, 1e-12) << k.label();
    EXPECT_NEAR(k.median_s(), want, 1e-12) << k.label();
  }
  EXPECT_NEAR(p.task_overhead_s(), 2 * us, 1e-12);
  EXPECT_EQ(p.overhead_samples(), 3u);
  ASSERT_EQ(p.memory_ops_size(), 2);
  for (const proto::MemoryOpTime& m : p.memory_ops()) EXPECT_NEAR(m.mean_s(), m.alloc() ? 1 * us : 0.5 * us, 1e-12);

  auto table = std::make_shared<const CalibrationTable>(testing::load_profile(p, "host-synthetic-trace"));
  const ComputeCostModel costs(cluster, KernelEfficiency{}, false, table.get());
  EXPECT_NEAR(costs.time_s(gemm(8, 8, 8)), 10 * us, 1e-12);  // the kernel's own time, no gap in it
  EXPECT_NEAR(costs.gap_s(gemm(8, 8, 8)), 2 * us, 1e-12);
  for (bool fuse : {false, true}) {
    const SimResult r = testing::simulate_calibrated(schedule, table, fuse);
    EXPECT_NEAR(r.iteration_time_s, 91 * us, 1e-12) << "fuse " << fuse;
    ASSERT_EQ(r.tasks.size(), 8u);
    for (const TaskTiming& t : r.tasks) {
      ASSERT_LT(t.task, 8u);
      EXPECT_NEAR(t.start_s, measured[t.task][0] * us, 1e-12) << "task " << t.task << " fuse " << fuse;
      EXPECT_NEAR(t.end_s, measured[t.task][1] * us, 1e-12) << "task " << t.task << " fuse " << fuse;
    }
  }
}

TEST(HostPlacement, APredictionWhoseRanksShareCoresSaysSo) {
  // A host profile recording its run's placement: 1 BLAS thread per rank on 2 cores. 1 or 2 ranks
  // have a core per thread (1 x 1 and 2 x 1 <= 2): no note; 3 ranks need 3 x 1 = 3 threads on 2
  // cores: the note. With 2 threads per rank (on 4 cores), 2 ranks fit (4 <= 4) and 3 do not (6).
  // A profile without the placement (0: written before the fields) says nothing.
  proto::CalibrationProfile p = testing::host_profile(gemm(8, 8, 8), 10e-6, 0);
  EXPECT_EQ(testing::load_profile(p, "host-placement").shared_cores_note(3), "");
  p.set_blas_threads_per_rank(1);
  p.set_cores(2);
  const CalibrationTable one = testing::load_profile(p, "host-placement");
  EXPECT_EQ(one.shared_cores_note(1), "");
  EXPECT_EQ(one.shared_cores_note(2), "");
  EXPECT_NE(one.shared_cores_note(3).find("3 ranks x 1 BLAS thread share the calibration machine's 2 cores"),
            std::string::npos)
      << one.shared_cores_note(3);
  p.set_blas_threads_per_rank(2);
  p.set_cores(4);
  const CalibrationTable two = testing::load_profile(p, "host-placement");
  EXPECT_EQ(two.shared_cores_note(2), "");
  EXPECT_NE(two.shared_cores_note(3).find("3 ranks x 2 BLAS threads share the calibration machine's 4 cores"),
            std::string::npos)
      << two.shared_cores_note(3);
}

}  // namespace
}  // namespace tandem::sim
