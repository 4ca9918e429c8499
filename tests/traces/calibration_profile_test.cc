// Calibration profiles (traces/calibration/calibration_profile.h): made from measured traces only,
// and read only when the file is a profile whose entries are in range.
#include "traces/calibration/calibration_profile.h"
#include "traces/calibration/collective_probe_table.h"

#include <gtest/gtest.h>

#include <cmath>

#include "shared/error.h"
#include "traces/trace_builder.h"
#include "traces/trace_io.h"
#include "trace_file_util.h"
#include "trace_test_util.h"

namespace tandem {
namespace {

using testing::slurp;
using testing::spit;

#define EXPECT_CONTAINS(haystack, needle) \
  EXPECT_NE(std::string(haystack).find(needle), std::string::npos) << "in: " << (haystack)

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}

// The sample program on both ranks (trace_test_util.h); task t of rank r lasts (t + 1) ms x (r + 1):
// the gemm (task 1) 2 ms and 4 ms, the all-reduce (task 2) 3 and 6 ms, attention (task 6) 7 and
// 14 ms, layernorm (task 7) 8 and 16 ms.
proto::Trace measured(const Schedule& s, const std::string& backend = "host") {
  TraceBuilder b(s, backend, "test");
  for (int rank = 0; rank < 2; ++rank) {
    b.begin_rank(s.program(rank));
    for (int t = 0; t < testing::kSampleTasks; ++t) b.task(rank, TaskId(t), 0.1 * t, 0.1 * t + 1e-3 * (t + 1) * (rank + 1));
  }
  return b.finish();
}

// The medians of two samples are their means: gemm 3 ms, attention 10.5 ms, layernorm 12 ms; the
// all-reduce is one instance over the group's two members, timed by its shorter member (the last
// arrival: 3 ms, rank 1's 6 ms are 3 ms of waiting); copies, sends, receives, Alloc and Free are
// not kernels (Allocs and Frees: AllocsFreesAndWaits below).
TEST(Calibration, MediansOfAMeasuredTrace) {
  const Schedule s = testing::sample_schedule();
  const proto::CalibrationProfile p = make_calibration(s, measured(s));
  EXPECT_EQ(p.format(), "tandem-calibration-1");
  ASSERT_EQ(p.kernels_size(), 3);
  ASSERT_EQ(p.collectives_size(), 1);
  for (const proto::KernelTime& k : p.kernels()) {
    EXPECT_EQ(k.samples(), 2u);
    const double expected = k.kernel() == uint32_t(Kernel::kGemm)        ? 3e-3
                            : k.kernel() == uint32_t(Kernel::kAttention) ? 10.5e-3
                                                                         : 12e-3;
    EXPECT_NEAR(k.median_s(), expected, 1e-12) << k.label();
    EXPECT_NEAR(k.mean_s(), expected, 1e-12) << k.label();
  }
  EXPECT_EQ(p.collectives(0).bytes(), 48 * testing::kMiB);
  EXPECT_EQ(p.collectives(0).group_size(), 2u);
  EXPECT_EQ(p.collectives(0).samples(), 1u);
  EXPECT_NEAR(p.collectives(0).median_s(), 3e-3, 1e-12);
  EXPECT_NEAR(p.collectives(0).mean_s(), 3e-3, 1e-12);
  EXPECT_EQ(p.ranks(), 2u);
}

TEST(Calibration, RefusesAPredictedTrace) {
  const Schedule s = testing::sample_schedule();
  EXPECT_CONTAINS(error_of([&] { make_calibration(s, measured(s, "sim"), "pred.trace"); }),
                  "pred.trace is predicted (backend sim), written by tandem sim: calibration needs a measured trace");
  EXPECT_EQ(error_of([&] { make_calibration(s, measured(s, "cuda")); }), "");
}

TEST(Calibration, RefusesATraceWithoutEvents) {
  const Schedule s = testing::sample_schedule();
  proto::Trace t = measured(s);
  t.clear_ranks();
  EXPECT_CONTAINS(error_of([&] { make_calibration(s, t, "empty.trace"); }),
                  "empty.trace holds no event (0 rank records): nothing to calibrate");
}

// What a --calibration file holds is told from its bytes, not its name.
TEST(Calibration, TellsTheKindOfAFile) {
  testing::TempDir dir;
  const Schedule s = testing::sample_schedule();
  EXPECT_EQ(calibration_file_kind(make_calibration(s, measured(s)).SerializeAsString(), "p.bin"),
            CalibrationFileKind::kProfile);
  EXPECT_EQ(calibration_file_kind("gemm\tfp32\t64,64,64\t12.5\n", "t.tsv"), CalibrationFileKind::kTable);
  EXPECT_EQ(calibration_file_kind("\n# a blank line first\n", "t.tsv"), CalibrationFileKind::kTable);

  EXPECT_CONTAINS(error_of([&] { calibration_file_kind("", "e.tsv"); }), "calibration file e.tsv: empty file");
  write_trace(measured(s), dir.file("run.trace"));
  EXPECT_CONTAINS(error_of([&] { calibration_file_kind(slurp(dir.file("run.trace")), "run.trace"); }),
                  "a tandem trace (tandem-trace-2), not a calibration profile");
  proto::CalibrationProfile other = make_calibration(s, measured(s));
  other.set_format("tandem-calibration-0");
  EXPECT_CONTAINS(error_of([&] { calibration_file_kind(other.SerializeAsString(), "old.pb"); }),
                  "format tandem-calibration-0, but this build reads tandem-calibration-1");
  EXPECT_CONTAINS(error_of([&] { calibration_file_kind(std::string("\x01\x00\x02", 3), "x"); }),
                  "not a tandem calibration profile");
  EXPECT_CONTAINS(error_of([&] { calibration_file_kind("gemm\tfp32\t64\t1\n", "x.pb"); }),
                  "not a tandem calibration profile");
}

TEST(Calibration, RefusesAProfileThatWouldNotCalibrate) {
  const Schedule s = testing::sample_schedule();
  const proto::CalibrationProfile good = make_calibration(s, measured(s));
  EXPECT_EQ(parse_calibration(good.SerializeAsString(), "p.pb").kernels_size(), 3);
  auto error_with = [&](auto&& edit) {
    proto::CalibrationProfile p = good;
    edit(p);
    return error_of([&] { parse_calibration(p.SerializeAsString(), "p.pb"); });
  };
  EXPECT_CONTAINS(error_with([](auto& p) { p.clear_kernels(), p.clear_collectives(); }),
                  "calibration profile p.pb: holds no kernel or collective time");
  EXPECT_CONTAINS(error_with([](auto& p) { p.mutable_kernels(0)->set_median_s(NAN); }), "is not a time");
  EXPECT_CONTAINS(error_with([](auto& p) { p.mutable_kernels(0)->set_median_s(-1); }), "is not a time");
  EXPECT_CONTAINS(error_with([](auto& p) { p.mutable_kernels(0)->set_kernel(kKernelCount); }), "out of range");
  EXPECT_CONTAINS(error_with([](auto& p) { p.mutable_kernels(0)->set_dtype(8); }), "dtype 8 out of range");
  EXPECT_CONTAINS(error_with([](auto& p) { p.mutable_kernels(0)->mutable_dims()->RemoveLast(); }),
                  "5 dims, expected 6");
  EXPECT_CONTAINS(error_with([](auto& p) { p.mutable_collectives(0)->set_group_size(0); }), "group size 0");
  EXPECT_CONTAINS(error_with([](auto& p) { p.mutable_collectives(0)->set_op(6); }), "op 6 out of range");
  EXPECT_CONTAINS(error_with([](auto& p) { p.mutable_collectives(0)->set_median_s(INFINITY); }), "is not a time");
  // The ranks' speed spread: (largest - smallest) / mean of non-negative times, below 2.
  for (double bad : {double(NAN), -0.01, 2.0}) {
    EXPECT_CONTAINS(error_with([&](auto& p) { p.set_rank_speed_spread(bad); }),
                    "calibration profile p.pb: rank_speed_spread " + std::to_string(bad) + " is not a spread in [0, 2)");
    EXPECT_CONTAINS(error_with([&](auto& p) { p.mutable_runs(0)->set_rank_speed_spread(bad); }),
                    "): rank_speed_spread " + std::to_string(bad) + " is not a spread in [0, 2)");
    EXPECT_CONTAINS(error_with([&](auto& p) { p.mutable_runs(0)->set_rank_speed_spread(bad); }),
                    "calibration profile p.pb: runs entry 0 (");
  }
}

TEST(Calibration, ReadsOnlyRegularFiles) {
  testing::TempDir dir;
  const Schedule s = testing::sample_schedule();
  write_calibration(make_calibration(s, measured(s)), dir.file("p.pb"));
  EXPECT_EQ(read_calibration(dir.file("p.pb")).collectives_size(), 1);
  EXPECT_CONTAINS(error_of([&] { read_calibration(dir.path().string()); }), "it is a directory");
  EXPECT_CONTAINS(error_of([&] { read_calibration("/dev/zero"); }), "/dev/zero: cannot read calibration profile: not a regular file");
  spit(dir.file("table.tsv"), "gemm\tfp32\t64,64,64\t12.5\n");
  EXPECT_CONTAINS(error_of([&] { read_calibration(dir.file("table.tsv")); }), "not a tandem calibration profile");
}

// The sample program's Alloc (task 0) and Free (task 8) of its 48 MiB buffer last 1 ms and 9 ms on
// rank 0, twice that on rank 1: one Alloc size, mean 1.5 ms over 2 samples, one Free size, mean
// 13.5 ms. The all-reduce's members last 3 and 6 ms: a member waited 4.5 - 3 = 1.5 ms on average.
TEST(Calibration, AllocsFreesAndWaits) {
  const Schedule s = testing::sample_schedule();
  const proto::CalibrationProfile p = make_calibration(s, measured(s));
  ASSERT_EQ(p.memory_ops_size(), 2);
  for (const proto::MemoryOpTime& m : p.memory_ops()) {
    EXPECT_EQ(m.bytes(), 48 * testing::kMiB);
    EXPECT_EQ(m.samples(), 2u);
    EXPECT_NEAR(m.mean_s(), m.alloc() ? 1.5e-3 : 13.5e-3, 1e-12);
  }
  EXPECT_NEAR(p.collectives(0).mean_wait_s(), 1.5e-3, 1e-12);
}

// A trace with every steady-state step's Allocs and Frees (Rank.memory_op_step_s, from step 1 on):
// the sample program's one Alloc and one Free (tasks 0 and 8, 48 MiB), 5 steps on both ranks:
// Allocs 1 ms and Frees 2 ms in steps 1, 2, 4, 5, but 5 ms and 10 ms (5x: page faults) in step 3,
// on both ranks. Per step the mean over the ranks: 1, 1, 5, 1, 1 ms; the median 1 ms (Frees 2 ms),
// 10 samples each. The traced step's events (the measured() trace: 1 and 2 ms Allocs, 9 and 18 ms
// Frees) no longer count: the steps hold that step too. The mean over all steps would be 1.8 ms
// (3.6 ms): one step would set it. A block count that is not whole is refused.
TEST(Calibration, AllocsAndFreesAreTheMedianStepsNotOneStep) {
  const Schedule s = testing::sample_schedule();
  proto::Trace t = measured(s);
  const double ms = 1e-3;
  for (proto::Rank& r : *t.mutable_ranks()) {
    r.set_memory_op_first_step(1);
    for (int step = 0; step < 5; ++step) {
      const double slow = step == 2 ? 5 : 1;
      r.add_memory_op_step_s(1 * ms * slow);  // task 0, the Alloc
      r.add_memory_op_step_s(2 * ms * slow);  // task 8, the Free
    }
  }
  const proto::CalibrationProfile p = make_calibration(s, t);
  ASSERT_EQ(p.memory_ops_size(), 2);
  for (const proto::MemoryOpTime& m : p.memory_ops()) {
    EXPECT_EQ(m.bytes(), 48 * testing::kMiB);
    EXPECT_EQ(m.samples(), 10u);
    EXPECT_NEAR(m.mean_s(), m.alloc() ? 1 * ms : 2 * ms, 1e-12);
  }
  t.mutable_ranks(1)->add_memory_op_step_s(1 * ms);
  EXPECT_CONTAINS(error_of([&] { make_calibration(s, t, "t.trace"); }),
                  "t.trace rank 1: memory_op_step_s holds 11 durations, not a whole number of steps");
}

// Several runs of one schedule: run A is measured(), run B the same with every task 3x as long.
// Kernels pool their samples: the gemm's four samples 2, 4 (A) and 6, 12 ms (B): mean 6 ms, median
// (4 + 6) / 2 = 5 ms. The all-reduce is one instance per run (instances of two runs are never one):
// shortest 3 ms (A) and 9 ms (B), mean 6 ms, and the waits 1.5 and 4.5 ms, mean 3 ms (pooled as one
// instance, the shortest would be 3 ms and the wait (3 + 6 + 9 + 18) / 4 - 3 = 6 ms). Each run's
// spread from its step times (the slowest rank's, step 1 left out): A's steps 10, 8, 9, 10, 11 ms
// on rank 0 and 1 ms on rank 1 -> 8, 9, 10, 11: median 9.5 ms, quartiles 8.75 and 10.25 (positions
// 0.75 and 2.25), IQR 1.5 / 9.5; B's 30, 30, 30: median 30 ms, IQR 0. A predicted trace or a trace
// of another backend among them is refused, named.
TEST(Calibration, SeveralRunsPoolKernelsAndKeepInstancesApart) {
  const Schedule s = testing::sample_schedule();
  proto::Trace a = measured(s), b = measured(s);
  for (proto::Rank& r : *b.mutable_ranks()) {
    proto::Events* e = r.mutable_events();
    for (int i = 0; i < e->start_s_size(); ++i) e->set_end_s(i, e->start_s(i) + 3 * (e->end_s(i) - e->start_s(i)));
  }
  const double ms = 1e-3;
  for (double x : {10.0, 8.0, 9.0, 10.0, 11.0}) a.mutable_ranks(0)->add_step_times_s(x * ms);
  for (int i = 0; i < 5; ++i) a.mutable_ranks(1)->add_step_times_s(1 * ms);
  for (int i = 0; i < 4; ++i) b.mutable_ranks(1)->add_step_times_s(30 * ms);
  const proto::CalibrationProfile p = make_calibration(s, {{&a, "a.trace"}, {&b, "b.trace"}});
  for (const proto::KernelTime& k : p.kernels())
    if (k.kernel() == uint32_t(Kernel::kGemm)) {
      EXPECT_EQ(k.samples(), 4u);
      EXPECT_NEAR(k.mean_s(), 6 * ms, 1e-12);
      EXPECT_NEAR(k.median_s(), 5 * ms, 1e-12);
    }
  ASSERT_EQ(p.collectives_size(), 1);
  EXPECT_EQ(p.collectives(0).samples(), 2u);
  EXPECT_NEAR(p.collectives(0).mean_s(), 6 * ms, 1e-12);
  EXPECT_NEAR(p.collectives(0).mean_wait_s(), 3 * ms, 1e-12);
  ASSERT_EQ(p.runs_size(), 2);
  EXPECT_EQ(p.runs(0).name(), "a.trace");
  EXPECT_EQ(p.runs(0).steps(), 4u);
  EXPECT_NEAR(p.runs(0).iteration_s(), 9.5 * ms, 1e-12);
  EXPECT_NEAR(p.runs(0).relative_iqr(), 1.5 / 9.5, 1e-12);
  EXPECT_EQ(p.runs(1).steps(), 3u);
  EXPECT_NEAR(p.runs(1).iteration_s(), 30 * ms, 1e-12);
  EXPECT_NEAR(p.runs(1).relative_iqr(), 0, 1e-12);
  const proto::Trace predicted = measured(s, "sim"), cuda = measured(s, "cuda");
  EXPECT_CONTAINS(error_of([&] { make_calibration(s, {{&a, "a.trace"}, {&predicted, "p.trace"}}); }), "p.trace is ");
  EXPECT_CONTAINS(error_of([&] { make_calibration(s, {{&a, "a.trace"}, {&cuda, "c.trace"}}); }),
                  "c.trace was measured by the cuda backend, a.trace by the host backend");
}

// Three runs, the second one's tasks all 3x as long (a slower machine): a shape's time is the
// median over the runs of each run's mean, so the slow run is outvoted. Per run, the gemm lasts
// 2 and 4 ms on the two ranks (measured() above): run means 3, 9, 3 ms, median 3 ms (pooling the
// six samples would give their mean, 5 ms); the pooled median of 2, 2, 4, 4, 6, 12 ms is 4 ms.
// The all-reduce: shortest member 3, 9, 3 ms, median 3 ms; its wait (mean of the members less the
// shortest) 1.5, 4.5, 1.5 ms, median 1.5 ms.
TEST(Calibration, SeveralRunsTakeTheMedianOverRunsOfEachRunsMean) {
  const Schedule s = testing::sample_schedule();
  proto::Trace a = measured(s), b = measured(s), c = measured(s);
  for (proto::Rank& r : *b.mutable_ranks()) {
    proto::Events* e = r.mutable_events();
    for (int i = 0; i < e->start_s_size(); ++i) e->set_end_s(i, e->start_s(i) + 3 * (e->end_s(i) - e->start_s(i)));
  }
  const double ms = 1e-3;
  const proto::CalibrationProfile p = make_calibration(s, {{&a, "a.trace"}, {&b, "b.trace"}, {&c, "c.trace"}});
  bool gemm = false;
  for (const proto::KernelTime& k : p.kernels())
    if (k.kernel() == uint32_t(Kernel::kGemm)) {
      gemm = true;
      EXPECT_EQ(k.samples(), 6u);
      EXPECT_NEAR(k.mean_s(), 3 * ms, 1e-12);
      EXPECT_NEAR(k.median_s(), 4 * ms, 1e-12);
    }
  EXPECT_TRUE(gemm);
  ASSERT_EQ(p.collectives_size(), 1);
  EXPECT_EQ(p.collectives(0).samples(), 3u);
  EXPECT_NEAR(p.collectives(0).mean_s(), 3 * ms, 1e-12);
  EXPECT_NEAR(p.collectives(0).mean_wait_s(), 1.5 * ms, 1e-12);
  EXPECT_EQ(p.runs_size(), 3);
}

// The sample program on both ranks, task t of rank r lasting (t + 1) ms x factor[r] (the
// kernels on the compute stream: gemm 2 ms, attention 7 ms, layernorm 8 ms, 17 ms at factor 1);
// `skip` (>= 0): rank 1 leaves that task out of its trace.
proto::Trace measured_at(const Schedule& s, double f0, double f1, int skip = -1) {
  TraceBuilder b(s, "host", "test");
  for (int rank = 0; rank < 2; ++rank) {
    b.begin_rank(s.program(rank));
    for (int t = 0; t < testing::kSampleTasks; ++t)
      if (rank == 0 || t != skip) b.task(rank, TaskId(t), 0.1 * t, 0.1 * t + 1e-3 * (t + 1) * (rank ? f1 : f0));
  }
  return b.finish();
}

// The ranks' unequal speed (CalibrationRun.rank_speed_spread, CalibrationProfile.rank_speed_spread):
// ranks at 1 and 1 + x of the same kernels give (largest - smallest) / mean = x / (1 + x / 2):
//   run a, rank 1 10 % slower: 0.1 / 1.05 = 0.0952381; run b, rank 0 20 % slower: 0.2 / 1.1 =
//   0.1818182; run c, equal: 0 (measured). The profile: their median, 0.0952381.
// A run whose rank 1 ran fewer kernels (its layernorm left out: not the same work) measures none:
// its entry is 0 and the median is over the other runs, here run a alone.
TEST(Calibration, TheRanksSpeedSpreadIsTheMedianOverRunsOfTheirKernelTimesSpread) {
  const Schedule s = testing::sample_schedule();
  const proto::Trace a = measured_at(s, 1, 1.1), b = measured_at(s, 1.2, 1), c = measured_at(s, 1, 1);
  const proto::CalibrationProfile p = make_calibration(s, {{&a, "a"}, {&b, "b"}, {&c, "c"}});
  ASSERT_EQ(p.runs_size(), 3);
  EXPECT_NEAR(p.runs(0).rank_speed_spread(), 0.1 / 1.05, 1e-12);
  EXPECT_NEAR(p.runs(1).rank_speed_spread(), 0.2 / 1.1, 1e-12);
  EXPECT_EQ(p.runs(2).rank_speed_spread(), 0);
  EXPECT_NEAR(p.rank_speed_spread(), 0.1 / 1.05, 1e-12);

  const proto::Trace d = measured_at(s, 1, 1.3, 7);
  const proto::CalibrationProfile q = make_calibration(s, {{&a, "a"}, {&d, "d"}});
  EXPECT_EQ(q.runs(1).rank_speed_spread(), 0);
  EXPECT_NEAR(q.rank_speed_spread(), 0.1 / 1.05, 1e-12);
  EXPECT_EQ(make_calibration(s, d, "d").rank_speed_spread(), 0);
}

// The runs' machine state probes (Trace.state_probe): per field the median over the runs that
// carry one. Zero fills 7, 10, 8 us -> 8 us; with one run without a probe, the other two's
// median (their average): all-reduce 16 KiB (3 + 5) / 2 = 4 us.
TEST(Calibration, TheRunsStateProbesTakeTheirMedian) {
  const Schedule s = testing::sample_schedule();
  proto::Trace a = measured(s), b = measured(s), c = measured(s);
  const auto set = [](proto::Trace& t, double ar16k, double fill) {
    proto::StateProbe& p = *t.mutable_state_probe();
    p.set_allreduce_256b_s(0.5e-6), p.set_allreduce_16kib_s(ar16k), p.set_zero_fill_1mib_s(fill), p.set_compute_s(2e-6);
  };
  set(a, 3e-6, 7e-6), set(b, 5e-6, 10e-6), set(c, 4e-6, 8e-6);
  proto::CalibrationProfile p = make_calibration(s, {{&a, "a.trace"}, {&b, "b.trace"}, {&c, "c.trace"}});
  ASSERT_TRUE(p.has_state_probe());
  EXPECT_EQ(p.state_probe().runs(), 3u);
  EXPECT_DOUBLE_EQ(p.state_probe().zero_fill_1mib_s(), 8e-6);
  EXPECT_DOUBLE_EQ(p.state_probe().allreduce_16kib_s(), 4e-6);
  c.clear_state_probe();
  p = make_calibration(s, {{&a, "a.trace"}, {&b, "b.trace"}, {&c, "c.trace"}});
  EXPECT_EQ(p.state_probe().runs(), 2u);
  EXPECT_DOUBLE_EQ(p.state_probe().allreduce_16kib_s(), 4e-6);
  EXPECT_DOUBLE_EQ(p.state_probe().zero_fill_1mib_s(), 8.5e-6);
  a.clear_state_probe(), b.clear_state_probe();
  EXPECT_FALSE(make_calibration(s, {{&a, "a.trace"}, {&b, "b.trace"}}).has_state_probe());
}

// Time between kernels, less the Allocs and Frees in between. Both ranks: Alloc [0, 0.1] ms, gemm
// [0.1, 1.0], Free [1.2, 1.5], attention [2.0, 3.0], layernorm [3.1, 4.0] (the others later). The
// gemm has no earlier kernel; attention could start at 1.0 and started at 2.0, of which 0.3 ms
// were the Free: 0.7 ms; layernorm 0.1 ms. Mean over the 4 kernels of both ranks: 0.4 ms.
TEST(Calibration, TimeBetweenKernelsLeavesOutAllocsAndFrees) {
  const Schedule s = testing::sample_schedule();
  TraceBuilder b(s, "host", "test");
  const double ms = 1e-3;
  for (int rank = 0; rank < 2; ++rank) {
    b.begin_rank(s.program(rank));
    b.task(rank, 0, 0, 0.1 * ms);
    b.task(rank, 1, 0.1 * ms, 1.0 * ms);
    for (TaskId t : {2, 3, 4, 5}) b.task(rank, t, 5 * ms, 6 * ms);
    b.task(rank, 8, 1.2 * ms, 1.5 * ms);
    b.task(rank, 6, 2.0 * ms, 3.0 * ms);
    b.task(rank, 7, 3.1 * ms, 4.0 * ms);
  }
  const proto::CalibrationProfile p = make_calibration(s, b.finish());
  EXPECT_EQ(p.overhead_samples(), 4u);
  EXPECT_NEAR(p.task_overhead_s(), 0.4 * ms, 1e-12);
}

// A host collective is timed less its member's own kernels and Allocs/Frees inside it (its one
// thread polls MPI only between tasks; sim/host_collective_progress.h). Rank 0: Alloc [0.5, 1.5]
// ms, all-reduce [1, 5], gemm [2, 3]: 4 - 0.5 (the Alloc's part after 1 ms) - 1 = 2.5 ms. Rank 1:
// all-reduce [1, 6], gemm [2, 4]: 5 - 2 = 3 ms. The instance: 2.5 ms, the wait 2.75 - 2.5 = 0.25
// ms. The same trace from a GPU backend (kernels do not hold a collective): 4 ms, wait 0.5 ms.
TEST(Calibration, HostCollectivesLeaveOutTheirRanksOwnWork) {
  const Schedule s = testing::sample_schedule();
  const double ms = 1e-3;
  for (const std::string backend : {"host", "cuda"}) {
    TraceBuilder b(s, backend, "test");
    for (int rank = 0; rank < 2; ++rank) {
      b.begin_rank(s.program(rank));
      b.task(rank, 0, rank == 0 ? 0.5 * ms : 0, rank == 0 ? 1.5 * ms : 0.1 * ms);
      b.task(rank, 2, 1 * ms, (rank == 0 ? 5 : 6) * ms);
      b.task(rank, 1, 2 * ms, (rank == 0 ? 3 : 4) * ms);
      for (TaskId t : {3, 4, 5}) b.task(rank, t, 7 * ms, 8 * ms);
      b.task(rank, 6, 8 * ms, 9 * ms);
      b.task(rank, 7, 9 * ms, 10 * ms);
      b.task(rank, 8, 10 * ms, 11 * ms);
    }
    const proto::CalibrationProfile p = make_calibration(s, b.finish());
    ASSERT_EQ(p.collectives_size(), 1);
    const bool host = backend == "host";
    EXPECT_NEAR(p.collectives(0).mean_s(), (host ? 2.5 : 4) * ms, 1e-12) << backend;
    EXPECT_NEAR(p.collectives(0).mean_wait_s(), (host ? 0.25 : 0.5) * ms, 1e-12) << backend;
  }
}

// A host run whose ranks shared the cores (traces/calibration/shared_core_time.h): both ranks of the
// sample program on 1 core, 1 BLAS thread each, with the same times (ms): Alloc [0, 0.2], gemm
// [0.2, 2.2], all-reduce [3, 4], attention [4.2, 6.2], layernorm [6.2, 8.2], Free [8.2, 8.4]; send,
// receive and copy [9, 10] (not busy). A rank's busy spans: its kernels, Alloc, Free and the time
// before attention (ready at the gemm's end, 2.2, to 4.2) and layernorm (none): together [0, 8.4]
// on both ranks, so n = 2 throughout and the rate min(1, 1 / (1 x 2)) = 1/2. Alone: each kernel 1
// ms (measured 2), the time between kernels (1 + 0) / 2 = 0.5 ms per sample (measured 1), the Alloc
// and the Free 0.1 ms each (0.2); the all-reduce as measured, 1 ms (nothing of the rank's own inside
// it); core_share 0.5. The same trace without the machine, or from a GPU backend: as measured,
// core_share 1. With Rank.memory_op_step_s (Alloc 0.4 ms, Free 0.6 ms in 2 steps on both ranks):
// scaled by each rank's traced-step ratio (0.1 + 0.1) / (0.2 + 0.2) = 1/2: 0.2 and 0.3 ms.
proto::Trace shared_on_one_core(const Schedule& s, const std::string& backend) {
  TraceBuilder b(s, backend, "test");
  const double ms = 1e-3;
  for (int rank = 0; rank < 2; ++rank) {
    b.begin_rank(s.program(rank));
    b.task(rank, 0, 0, 0.2 * ms);
    b.task(rank, 1, 0.2 * ms, 2.2 * ms);
    b.task(rank, 2, 3 * ms, 4 * ms);
    for (TaskId t : {3, 4, 5}) b.task(rank, t, 9 * ms, 10 * ms);
    b.task(rank, 6, 4.2 * ms, 6.2 * ms);
    b.task(rank, 7, 6.2 * ms, 8.2 * ms);
    b.task(rank, 8, 8.2 * ms, 8.4 * ms);
  }
  return b.finish();
}

TEST(Calibration, AHostRunThatSharedTheCoresHoldsItsTimesAlone) {
  const Schedule s = testing::sample_schedule();
  const double ms = 1e-3;
  const MeasuredMachine one_core{1, 1};
  struct Case {
    std::string backend;
    MeasuredMachine machine;
    double share;  // of a core: what is left of each measured kernel, time between kernels, Alloc/Free
  };
  for (const Case& c : {Case{"host", one_core, 0.5}, Case{"host", {}, 1}, Case{"cuda", one_core, 1}}) {
    const std::string at = c.backend + " on " + std::to_string(c.machine.cores) + " cores";
    const proto::CalibrationProfile p = make_calibration(s, shared_on_one_core(s, c.backend), "t", c.machine);
    ASSERT_EQ(p.kernels_size(), 3) << at;
    for (const proto::KernelTime& k : p.kernels()) EXPECT_NEAR(k.mean_s(), 2 * ms * c.share, 1e-12) << at;
    EXPECT_EQ(p.overhead_samples(), 4u) << at;
    EXPECT_NEAR(p.task_overhead_s(), 0.5 * ms * 2 * c.share, 1e-12) << at;
    ASSERT_EQ(p.memory_ops_size(), 2) << at;
    for (const proto::MemoryOpTime& m : p.memory_ops()) EXPECT_NEAR(m.mean_s(), 0.2 * ms * c.share, 1e-12) << at;
    ASSERT_EQ(p.collectives_size(), 1) << at;
    EXPECT_NEAR(p.collectives(0).mean_s(), 1 * ms, 1e-12) << at;
    ASSERT_EQ(p.runs_size(), 1);
    ASSERT_TRUE(p.runs(0).has_core_share()) << at;
    EXPECT_NEAR(p.runs(0).core_share(), c.share, 1e-12) << at;
    // The placement is the profile's when known, for a host run.
    EXPECT_EQ(p.cores(), c.backend == "host" ? uint32_t(c.machine.cores) : 0u) << at;
    EXPECT_EQ(p.blas_threads_per_rank(), c.backend == "host" ? uint32_t(c.machine.blas_threads_per_rank) : 0u) << at;
  }
  proto::Trace t = shared_on_one_core(s, "host");
  for (proto::Rank& r : *t.mutable_ranks()) {
    r.set_memory_op_first_step(1);
    for (int step = 0; step < 2; ++step) r.add_memory_op_step_s(0.4 * ms), r.add_memory_op_step_s(0.6 * ms);
  }
  const proto::CalibrationProfile p = make_calibration(s, t, "t", one_core);
  ASSERT_EQ(p.memory_ops_size(), 2);
  for (const proto::MemoryOpTime& m : p.memory_ops()) EXPECT_NEAR(m.mean_s(), m.alloc() ? 0.2 * ms : 0.3 * ms, 1e-12);
}

// A run that fit its cores (2 ranks x 1 BLAS thread on 2 cores) calibrates exactly as without the
// machine: the whole profile is the same, bit for bit, but for the placement it records.
TEST(Calibration, ARunThatFitItsCoresIsUnchanged) {
  const Schedule s = testing::sample_schedule();
  const proto::Trace t = measured(s);
  proto::CalibrationProfile with = make_calibration(s, t, "t", MeasuredMachine{2, 1});
  EXPECT_EQ(with.cores(), 2u);
  EXPECT_EQ(with.blas_threads_per_rank(), 1u);
  EXPECT_EQ(with.runs(0).core_share(), 1);
  with.clear_cores(), with.clear_blas_threads_per_rank();
  EXPECT_EQ(with.SerializeAsString(), make_calibration(s, t, "t").SerializeAsString());
}

// A run's core_share is a share of a core, in (0, 1]; a profile written before the field has none.
TEST(Calibration, RefusesAProfileWhoseCoreShareIsNotAShare) {
  const Schedule s = testing::sample_schedule();
  proto::CalibrationProfile p = make_calibration(s, measured(s), "t.trace");
  for (double bad : {0.0, -0.5, 1.5, double(NAN), double(INFINITY)}) {
    p.mutable_runs(0)->set_core_share(bad);
    EXPECT_CONTAINS(error_of([&] { parse_calibration(p.SerializeAsString(), "p.pb"); }),
                    "calibration profile p.pb: runs entry 0 (\"t.trace\"): core_share " + std::to_string(bad) +
                        " is not a share of a core in (0, 1]");
  }
  p.mutable_runs(0)->set_core_share(1);
  EXPECT_EQ(parse_calibration(p.SerializeAsString(), "p.pb").runs(0).core_share(), 1);
  p.mutable_runs(0)->clear_core_share();
  EXPECT_FALSE(parse_calibration(p.SerializeAsString(), "p.pb").runs(0).has_core_share());
}

// The collective probe's plan (traces/calibration/collective_probe_table.h): group sizes 2, 4, ...
// below the world and the world; sizes 8 B..4 MiB in powers of two, whole fp32 elements per member.
TEST(CollectiveProbe, PlanAndFile) {
  EXPECT_TRUE(probe_group_sizes(1).empty());
  EXPECT_EQ(probe_group_sizes(2), (std::vector<int>{2}));
  EXPECT_EQ(probe_group_sizes(6), (std::vector<int>{2, 4, 6}));
  const std::vector<int64_t> two = probe_bytes(2);  // 2^3..2^22, all multiples of 8
  ASSERT_EQ(two.size(), 20u);
  EXPECT_EQ(two.front(), 8);
  EXPECT_EQ(two.back(), 4 << 20);
  const std::vector<int64_t> three = probe_bytes(3);  // multiples of 12: 8 -> 0 (left out), 16 -> 12, 32 -> 24
  EXPECT_EQ(three[0], 12);
  EXPECT_EQ(three[1], 24);
  EXPECT_EQ(three.size(), 19u);
  const std::vector<CollectiveProbePoint> pts{{CollectiveOp::kAllGather, 2, 4096, 1.25e-5, 31},
                                              {CollectiveOp::kReduceScatter, 4, 1 << 20, 3.5e-4, 15}};
  const std::vector<CollectiveProbePoint> back = parse_probe(format_probe(pts), "probe.tsv");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].op, CollectiveOp::kReduceScatter);
  EXPECT_EQ(back[1].group_size, 4);
  EXPECT_EQ(back[1].bytes, 1 << 20);
  EXPECT_NEAR(back[1].time_s, 3.5e-4, 1e-12);
  EXPECT_EQ(back[1].reps, 15);
  EXPECT_CONTAINS(error_of([] { parse_probe("all-reduce\t2\t64\tfast\t3\n", "p.tsv"); }), "p.tsv:1: bad time");
  EXPECT_CONTAINS(error_of([] { parse_probe("broadcast\t2\t64\t1e-6\t3\n", "p.tsv"); }), "unknown collective");
  EXPECT_CONTAINS(error_of([] { parse_probe("", "p.tsv"); }), "no point");
  proto::CalibrationProfile prof;
  add_collective_probe(prof, pts);
  ASSERT_EQ(prof.collective_probe_size(), 2);
  EXPECT_EQ(prof.collective_probe(0).op(), uint32_t(CollectiveOp::kAllGather));
}

// The probe's gaps (session 17): each point carries the seconds the ranks spun before each call, a
// sixth column; a file of five columns (written before it) reads as gap 0. Repetitions fall with
// the gap (probe_reps(bytes, gap)): at 0 probe_reps(bytes) (31 at 4 KiB), at 0.5 ms at most 15, 9 at
// 2 ms and up to 64 KiB at every gap, above 64 KiB 7 at 4 ms and 5 at 8 ms.
TEST(CollectiveProbe, GapsInTheFileAndTheProfile) {
  EXPECT_EQ(probe_reps(4096, 0), 31);
  EXPECT_EQ(probe_reps(4096, 0.5e-3), 15);
  EXPECT_EQ(probe_reps(4 << 20, 0.5e-3), 7);
  EXPECT_EQ(probe_reps(4096, 2e-3), 9);
  EXPECT_EQ(probe_reps(4096, 4e-3), 9);
  EXPECT_EQ(probe_reps(4096, 8e-3), 9);
  EXPECT_EQ(probe_reps(128 << 10, 2e-3), 9);
  EXPECT_EQ(probe_reps(128 << 10, 4e-3), 7);
  EXPECT_EQ(probe_reps(128 << 10, 8e-3), 5);
  const std::vector<CollectiveProbePoint> pts{{CollectiveOp::kAllReduce, 2, 4096, 1.25e-5, 31, 0},
                                              {CollectiveOp::kAllReduce, 2, 4096, 2.5e-5, 5, 8e-3}};
  const std::vector<CollectiveProbePoint> back = parse_probe(format_probe(pts), "probe.tsv");
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[0].gap_s, 0);
  EXPECT_NEAR(back[1].gap_s, 8e-3, 1e-15);
  EXPECT_NEAR(back[1].time_s, 2.5e-5, 1e-15);
  const std::vector<CollectiveProbePoint> old = parse_probe("all-gather\t2\t64\t1e-6\t3\n", "old.tsv");
  ASSERT_EQ(old.size(), 1u);
  EXPECT_EQ(old[0].gap_s, 0);
  EXPECT_EQ(old[0].reps, 3);
  EXPECT_CONTAINS(error_of([] { parse_probe("all-reduce\t2\t64\t1e-6\t3\tsoon\n", "p.tsv"); }),
                  "p.tsv:1: bad gap 'soon'");
  EXPECT_CONTAINS(error_of([] {
                    parse_probe("all-reduce\t2\t64\t1e-6\t3\t0\n\nall-reduce\t2\t64\t1e-6\t3\t-1e-3\n", "p.tsv");
                  }),
                  "p.tsv:3: bad gap '-1e-3'");
  EXPECT_CONTAINS(error_of([] { parse_probe("all-reduce\t2\t64\t1e-6\t3\t0\t1\n", "p.tsv"); }),
                  "p.tsv:1: more than 6 fields");
  proto::CalibrationProfile prof;
  add_collective_probe(prof, pts);
  ASSERT_EQ(prof.collective_probe_size(), 2);
  EXPECT_NEAR(prof.collective_probe(1).gap_s(), 8e-3, 1e-15);
  // A profile's probe entry with a gap < 0 or not finite is refused, naming the entry.
  const Schedule s = testing::sample_schedule();
  proto::CalibrationProfile good = make_calibration(s, measured(s));
  add_collective_probe(good, pts);
  EXPECT_EQ(parse_calibration(good.SerializeAsString(), "p.pb").collective_probe(1).gap_s(), 8e-3);
  for (double gap : {-1e-3, double(NAN)}) {
    proto::CalibrationProfile bad = good;
    bad.mutable_collective_probe(1)->set_gap_s(gap);
    EXPECT_CONTAINS(error_of([&] { parse_calibration(bad.SerializeAsString(), "p.pb"); }),
                    "collective_probe entry 1: gap_s");
  }
}

TEST(CollectiveProbeTable, TheSharedPlacementsProbeIsCheckedLikeTheOther) {
  // add_shared_collective_probe keeps the points and the ranks they were probed with; on load an
  // entry of shared_collective_probe is checked as a collective_probe entry is, naming its field,
  // and a shared probe of fewer than 2 ranks is refused.
  const std::vector<CollectiveProbePoint> pts = parse_probe("all-reduce\t2\t64\t9e-5\t3\t0\n", "p.tsv");
  const Schedule s = testing::sample_schedule();
  proto::CalibrationProfile good = make_calibration(s, measured(s));
  add_shared_collective_probe(good, 4, pts);
  ASSERT_EQ(good.shared_collective_probe_size(), 1);
  EXPECT_EQ(good.shared_probe_ranks(), 4u);
  EXPECT_EQ(good.collective_probe_size(), 0);
  EXPECT_NEAR(parse_calibration(good.SerializeAsString(), "p.pb").shared_collective_probe(0).time_s(), 9e-5, 1e-18);
  proto::CalibrationProfile bad = good;
  bad.mutable_shared_collective_probe(0)->set_time_s(0);
  EXPECT_CONTAINS(error_of([&] { parse_calibration(bad.SerializeAsString(), "p.pb"); }),
                  "shared_collective_probe entry 0: time_s");
  bad = good;
  bad.set_shared_probe_ranks(1);
  EXPECT_CONTAINS(error_of([&] { parse_calibration(bad.SerializeAsString(), "p.pb"); }), "shared_probe_ranks 1");
}

}  // namespace
}  // namespace tandem
