// The machine state probe's file, its ratios and the scaling of a profile to it
// (traces/calibration/machine_state_probe.h); every expected number derived in the comments.
#include "traces/calibration/machine_state_probe.h"

#include <gtest/gtest.h>

#include "shared/error.h"

namespace tandem {
namespace {

MachineStateProbe probe(double ar256, double ar16k, double fill, double compute) {
  MachineStateProbe p;
  p.allreduce_256b_s = ar256, p.allreduce_16kib_s = ar16k, p.zero_fill_1mib_s = fill, p.compute_s = compute;
  p.reps = 41, p.ranks = 2;
  return p;
}

// min_of_round_medians by hand. Three rounds of five: medians 3, 9 (a preempted round: every time
// slower) and 4; the minimum is 3, where the median of all fifteen (sorted: 1 2 3 3 4 4 4 5 5 5 8 9
// 9 9 9, the 8th) is 5: the preempted round moved the plain median, not the statistic.
TEST(MachineStateProbe, MinOfRoundMediansSeesThroughOnePreemptedRound) {
  const std::vector<double> t = {5, 1, 3, 2, 4, /**/ 9, 8, 9, 9, 9, /**/ 4, 3, 4, 5, 5};
  EXPECT_DOUBLE_EQ(min_of_round_medians(t, 3), 3.0);
  // One round: the plain median. Even sizes take the mean of the two middle values: rounds {2, 6}
  // -> 4 and {1, 5} -> 3, so 3.
  EXPECT_DOUBLE_EQ(min_of_round_medians(t, 1), 5.0);
  EXPECT_DOUBLE_EQ(min_of_round_medians({6, 2, 1, 5}, 2), 3.0);
  // A level that moves every round moves the statistic by as much (the all-reduce's third mode):
  // the same fifteen times 2.5 give 7.5.
  std::vector<double> slow = t;
  for (double& x : slow) x *= 2.5;
  EXPECT_DOUBLE_EQ(min_of_round_medians(slow, 3), 7.5);
  // Times that do not split into the rounds are a bug of the probe.
  EXPECT_THROW(min_of_round_medians(t, 4), Error);
  EXPECT_THROW(min_of_round_medians({}, 1), Error);
  EXPECT_THROW(min_of_round_medians(t, 0), Error);
}

TEST(MachineStateProbe, FileRoundTripsAndRefusesWhatItIsNot) {
  const MachineStateProbe p = probe(4.5e-7, 2.75e-6, 7.125e-6, 2.5e-6);
  const MachineStateProbe q = parse_state_probe(format_state_probe(p), "p.txt");
  EXPECT_DOUBLE_EQ(q.allreduce_256b_s, 4.5e-7);
  EXPECT_DOUBLE_EQ(q.allreduce_16kib_s, 2.75e-6);
  EXPECT_DOUBLE_EQ(q.zero_fill_1mib_s, 7.125e-6);
  EXPECT_DOUBLE_EQ(q.compute_s, 2.5e-6);
  EXPECT_EQ(q.reps, 41);
  EXPECT_EQ(q.ranks, 2);
  const auto error_of = [](const std::string& text) {
    try {
      parse_state_probe(text, "p.txt");
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 2) << e.what();
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("allreduce_256b_s 1e-6\n").find("p.txt:1: no tab"), std::string::npos);
  EXPECT_NE(error_of("speed\t1\n").find("p.txt:1: unknown key 'speed'"), std::string::npos);
  EXPECT_NE(error_of("compute_s\tfast\n").find("'fast' is not a number"), std::string::npos);
  // A field missing (or 0): no ratio could be taken from it.
  EXPECT_NE(error_of("allreduce_256b_s\t1e-6\nallreduce_16kib_s\t1e-6\nzero_fill_1mib_s\t1e-6\n").find("needs positive"),
            std::string::npos);
}

// then: all-reduces 0.5 and 2.5 us, fill 8 us, compute 2 us; now: 0.6 and 3.0 us, 10 us, 2.2 us:
// memory 10 / 8 = 1.25, communication the same 1.25 (the zero fill's, not the all-reduces' 3.6 / 3 =
// 1.2), compute 2.2 / 2 = 1.1. The all-reduce probe in its third mode (2.4x: 1.2 and 6.0 us) moves
// no ratio.
TEST(MachineStateProbe, RatiosOfEachKindOfCost) {
  const StateRatios r = state_ratios(probe(0.6e-6, 3.0e-6, 10e-6, 2.2e-6), probe(0.5e-6, 2.5e-6, 8e-6, 2e-6));
  EXPECT_NEAR(r.communication, 1.25, 1e-12);
  EXPECT_NEAR(r.memory, 1.25, 1e-12);
  EXPECT_NEAR(r.compute, 1.1, 1e-12);
  const StateRatios third = state_ratios(probe(1.2e-6, 6.0e-6, 10e-6, 2.2e-6), probe(0.5e-6, 2.5e-6, 8e-6, 2e-6));
  EXPECT_NEAR(third.communication, 1.25, 1e-12);
  EXPECT_THROW(state_ratios(MachineStateProbe{}, probe(1, 1, 1, 1)), Error);
}

// Each cost by its own kind's ratio (1.2, 1.25, 1.1 as above); the runs' spread as measured.
TEST(MachineStateProbe, ScalesEachCostOfAProfileByItsKindsRatio) {
  proto::CalibrationProfile p;
  proto::CollectiveTime* c = p.add_collectives();
  c->set_mean_s(100e-6), c->set_median_s(90e-6), c->set_mean_wait_s(10e-6);
  p.add_collective_probe()->set_time_s(50e-6);
  p.add_memory_ops()->set_mean_s(4e-6);
  proto::KernelTime* k = p.add_kernels();
  k->set_mean_s(50e-6), k->set_median_s(40e-6);
  p.add_gemm_probe()->set_time_s(20e-6);
  p.set_task_overhead_s(0.5e-6);
  p.add_runs()->set_iteration_s(9e-3);
  scale_to_state(p, StateRatios{1.2, 1.25, 1.1});
  EXPECT_NEAR(p.collectives(0).mean_s(), 120e-6, 1e-15);
  EXPECT_NEAR(p.collectives(0).median_s(), 108e-6, 1e-15);
  EXPECT_NEAR(p.collectives(0).mean_wait_s(), 12e-6, 1e-15);
  EXPECT_NEAR(p.collective_probe(0).time_s(), 60e-6, 1e-15);
  EXPECT_NEAR(p.memory_ops(0).mean_s(), 5e-6, 1e-15);
  EXPECT_NEAR(p.kernels(0).mean_s(), 55e-6, 1e-15);
  EXPECT_NEAR(p.kernels(0).median_s(), 44e-6, 1e-15);
  EXPECT_NEAR(p.gemm_probe(0).time_s(), 22e-6, 1e-15);
  EXPECT_NEAR(p.task_overhead_s(), 0.55e-6, 1e-15);
  EXPECT_EQ(p.runs(0).iteration_s(), 9e-3);
  // A profile's own probe: absent is invalid (a prediction refuses to scale it).
  EXPECT_FALSE(profile_state_probe(p).valid());
  p.mutable_state_probe()->set_allreduce_256b_s(1e-6);
  p.mutable_state_probe()->set_allreduce_16kib_s(2e-6);
  p.mutable_state_probe()->set_zero_fill_1mib_s(3e-6);
  p.mutable_state_probe()->set_compute_s(4e-6);
  EXPECT_TRUE(profile_state_probe(p).valid());
  EXPECT_EQ(profile_state_probe(p).zero_fill_1mib_s, 3e-6);
}

// The calibration's state from probes taken alone before its runs (tandem calibrate --state-probe),
// by hand: zero fills 9, 7, 8 us -> median 8 us; compute 2.0, 2.6, 2.2 us -> 2.2; all-reduce 16 KiB
// 3, 7 (its third mode), 2.8 -> 3; 256 B 0.5, 0.9, 0.6 -> 0.6; runs 3, taken alone. Four probes
// (fills 9, 7, 8, 10): the mean of the middle two, (8 + 9) / 2 = 8.5 us. It replaces what the runs'
// own probes had set (runs 1, not alone). Then the ratio of a prediction's probe (fill 10 us,
// compute 2.75 us) to it: 10 / 8 = 1.25, 2.75 / 2.2 = 1.25.
TEST(MachineStateProbe, CalibrationStateFromProbesTakenAloneIsTheirMedian) {
  proto::CalibrationProfile p;
  set_profile_state_probe(p, {probe(0.7e-6, 4e-6, 9.5e-6, 2.1e-6)}, false);
  EXPECT_FALSE(p.state_probe().taken_alone());
  set_profile_state_probe(p, {probe(0.5e-6, 3e-6, 9e-6, 2.0e-6), probe(0.9e-6, 7e-6, 7e-6, 2.6e-6),
                              probe(0.6e-6, 2.8e-6, 8e-6, 2.2e-6)}, true);
  EXPECT_EQ(p.state_probe().runs(), 3u);
  EXPECT_TRUE(p.state_probe().taken_alone());
  EXPECT_DOUBLE_EQ(p.state_probe().zero_fill_1mib_s(), 8e-6);
  EXPECT_DOUBLE_EQ(p.state_probe().compute_s(), 2.2e-6);
  EXPECT_DOUBLE_EQ(p.state_probe().allreduce_16kib_s(), 3e-6);
  EXPECT_DOUBLE_EQ(p.state_probe().allreduce_256b_s(), 0.6e-6);
  const StateRatios r = state_ratios(probe(0.6e-6, 3e-6, 10e-6, 2.75e-6), profile_state_probe(p));
  EXPECT_NEAR(r.memory, 1.25, 1e-12);
  EXPECT_NEAR(r.compute, 1.25, 1e-12);
  set_profile_state_probe(p, {probe(1, 1, 9e-6, 1), probe(1, 1, 7e-6, 1), probe(1, 1, 8e-6, 1), probe(1, 1, 10e-6, 1)},
                          true);
  EXPECT_DOUBLE_EQ(p.state_probe().zero_fill_1mib_s(), 8.5e-6);
  EXPECT_EQ(p.state_probe().runs(), 4u);
  // None, or one without a positive time: bad input, naming which.
  try {
    set_profile_state_probe(p, {probe(1, 1, 1, 1), MachineStateProbe{}}, true);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("probe 2 of 2"), std::string::npos) << e.what();
  }
  EXPECT_THROW(set_profile_state_probe(p, {}, true), Error);
}

}  // namespace
}  // namespace tandem
