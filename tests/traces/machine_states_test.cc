// The machine states of a calibration's runs (traces/calibration/machine_states.h): grouped by the
// zero fill of the probe taken before each run, chosen by a prediction's probe, and checked on load.
// Every expected number is derived in the comments from kStateSplit = 0.12 (in ln).
#include "traces/calibration/machine_states.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "shared/error.h"
#include "traces/calibration/calibration_profile.h"

namespace tandem {
namespace {

MachineStateProbe fill(double us) {
  MachineStateProbe p;
  p.allreduce_256b_s = 0.5e-6, p.allreduce_16kib_s = 3e-6, p.zero_fill_1mib_s = us * 1e-6, p.compute_s = 2.5e-6;
  return p;
}

TEST(MachineStates, RunsGroupWhereTheSortedZeroFillsStepBeyondTheSplit) {
  // Session 17's f1 calibration: 10.26, 7.25, 7.59, 10.24, 10.52 us. Sorted 7.25 7.59 10.24 10.26
  // 10.52; steps ln(7.59/7.25) = 0.046, ln(10.24/7.59) = 0.300 > 0.12, 0.002, 0.026: two groups,
  // runs {2, 3} and {1, 4, 5} (indices 1, 2 and 0, 3, 4), the faster first.
  const std::vector<std::vector<size_t>> g =
      group_by_state({fill(10.26), fill(7.25), fill(7.59), fill(10.24), fill(10.52)});
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[0], (std::vector<size_t>{1, 2}));
  EXPECT_EQ(g[1], (std::vector<size_t>{0, 3, 4}));
  EXPECT_EQ(describe_states({fill(10.26), fill(7.25), fill(7.59), fill(10.24), fill(10.52)}, g),
            "2 machine states: zero fill 7.42 us (runs 2, 3), zero fill 10.26 us (runs 1, 4, 5)");
  // One state: steps ln(7.3/7.1) = 0.028, ln(7.6/7.3) = 0.040.
  EXPECT_EQ(group_by_state({fill(7.3), fill(7.1), fill(7.6)}).size(), 1u);
  // Either side of the split: 7.0 -> 7.9 is ln 1.1286 = 0.121 > 0.12: two; 7.0 -> 7.88 is
  // ln 1.1257 = 0.118: one.
  EXPECT_EQ(group_by_state({fill(7.0), fill(7.9)}).size(), 2u);
  EXPECT_EQ(group_by_state({fill(7.0), fill(7.88)}).size(), 1u);
  // Single linkage: 7.0, 7.8, 8.7 step 0.108 and 0.109, each within the split, so one group though
  // its ends lie ln(8.7/7.0) = 0.217 apart (the 21 of 836 probes between the states can join them).
  EXPECT_EQ(group_by_state({fill(7.0), fill(7.8), fill(8.7)}).size(), 1u);
  // Session 17's n2: 7.24 7.32 7.33 7.51 7.67 7.72 | 9.56 10.27 10.50 | 19.23: three states.
  EXPECT_EQ(group_by_state({fill(7.24), fill(7.32), fill(7.33), fill(19.23), fill(10.27), fill(10.5), fill(9.56),
                            fill(7.72), fill(7.51)})
                .size(),
            3u);
  EXPECT_TRUE(group_by_state({}).empty());
  try {
    group_by_state({fill(7.0), fill(0)});
    FAIL() << "a probe without a zero fill grouped";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    EXPECT_NE(std::string(e.what()).find("machine state probe 2 of 2"), std::string::npos) << e.what();
  }
}

proto::CalibrationProfile profile_with_states() {
  proto::CalibrationProfile p;
  p.set_format(kCalibrationFormat);
  p.set_backend("host");
  auto kernel = [](proto::CalibrationProfile& q, double s) {
    proto::KernelTime* k = q.add_kernels();
    for (int i = 0; i < 6; ++i) k->add_dims(8);
    k->set_mean_s(s), k->set_median_s(s), k->set_samples(1);
  };
  kernel(p, 12e-6);
  p.add_gemm_probe()->set_m(8);
  p.mutable_gemm_probe(0)->set_n(8), p.mutable_gemm_probe(0)->set_k(8), p.mutable_gemm_probe(0)->set_time_s(1e-6);
  set_profile_state_probe(p, {fill(7.4), fill(7.4), fill(10.26), fill(10.26), fill(10.26)}, true);
  proto::CalibrationProfile fast = p, slow = p;
  fast.clear_kernels(), slow.clear_kernels();
  kernel(fast, 10e-6), kernel(slow, 13e-6);
  fast.set_task_overhead_s(0.5e-6), slow.set_task_overhead_s(0.7e-6);
  set_profile_state_probe(fast, {fill(7.4), fill(7.4)}, true);
  set_profile_state_probe(slow, {fill(10.26), fill(10.26), fill(10.26)}, true);
  add_state(p, fast);
  add_state(p, slow);
  return p;
}

TEST(MachineStates, APredictionsProbeTakesTheNearestStateAndFallsInItWithinTheSplit) {
  const proto::CalibrationProfile p = profile_with_states();
  // 7.0: ln(7.4/7.0) = 0.056 <= 0.12, state 0, in it.
  StateChoice c = choose_state(p, fill(7.0));
  EXPECT_EQ(c.state, 0);
  EXPECT_EQ(c.states, 2);
  EXPECT_TRUE(c.matched);
  EXPECT_EQ(c.runs, 2);
  // 9.2: ln(9.2/7.4) = 0.218, ln(10.26/9.2) = 0.109 <= 0.12: state 1, in it.
  c = choose_state(p, fill(9.2));
  EXPECT_EQ(c.state, 1);
  EXPECT_TRUE(c.matched);
  EXPECT_EQ(c.runs, 3);
  EXPECT_DOUBLE_EQ(c.zero_fill_s, 10.26e-6);
  // 8.5: ln(8.5/7.4) = 0.139, ln(10.26/8.5) = 0.188: state 0, the nearest, but in neither.
  c = choose_state(p, fill(8.5));
  EXPECT_EQ(c.state, 0);
  EXPECT_FALSE(c.matched);
  // 19: the third state of session 17's n2, calibrated nowhere here: state 1, not in it.
  c = choose_state(p, fill(19));
  EXPECT_EQ(c.state, 1);
  EXPECT_FALSE(c.matched);
  // Without states the profile is its one state (its median probe, 10.26 us: the middle of five).
  proto::CalibrationProfile one = p;
  one.clear_states();
  c = choose_state(one, fill(10.0));
  EXPECT_EQ(c.state, -1);
  EXPECT_EQ(c.states, 1);
  EXPECT_TRUE(c.matched);
  EXPECT_FALSE(choose_state(one, fill(7.4)).matched);  // ln(10.26/7.4) = 0.327
  one.clear_state_probe();
  EXPECT_EQ(choose_state(one, fill(7.4)).states, 0);
}

TEST(MachineStates, AStatesProfileIsTheProfileWithThatStatesRunsTimes) {
  const proto::CalibrationProfile p = profile_with_states();
  const proto::CalibrationProfile slow = profile_in_state(p, 1);
  ASSERT_EQ(slow.kernels_size(), 1);
  EXPECT_DOUBLE_EQ(slow.kernels(0).mean_s(), 13e-6);  // the state's, not the pooled 12 us
  EXPECT_DOUBLE_EQ(slow.task_overhead_s(), 0.7e-6);
  EXPECT_DOUBLE_EQ(slow.state_probe().zero_fill_1mib_s(), 10.26e-6);
  EXPECT_EQ(slow.state_probe().runs(), 3u);
  EXPECT_EQ(slow.gemm_probe_size(), 1);  // the machine's probes are the profile's
  EXPECT_EQ(slow.states_size(), 0);
  const proto::CalibrationProfile pooled = profile_in_state(p, -1);
  EXPECT_DOUBLE_EQ(pooled.kernels(0).mean_s(), 12e-6);
  EXPECT_EQ(pooled.states_size(), 0);
  EXPECT_THROW(profile_in_state(p, 2), Error);
}

TEST(MachineStates, AStatesEntriesAreCheckedOnLoadAsTheProfilesAre) {
  proto::CalibrationProfile p = profile_with_states();
  EXPECT_EQ(parse_calibration(p.SerializeAsString(), "p.pb").states_size(), 2);
  auto error = [](const proto::CalibrationProfile& q) {
    try {
      parse_calibration(q.SerializeAsString(), "p.pb");
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 2);
      return std::string(e.what());
    }
    return std::string();
  };
  proto::CalibrationProfile q = p;
  q.mutable_states(1)->mutable_state_probe()->set_zero_fill_1mib_s(0);
  EXPECT_NE(error(q).find("p.pb: states entry 1: state_probe zero_fill_1mib_s"), std::string::npos) << error(q);
  q = p;
  q.mutable_states(0)->mutable_kernels(0)->set_mean_s(-1);
  EXPECT_NE(error(q).find("states entry 0: kernel entry 0"), std::string::npos) << error(q);
  q = p;
  q.mutable_states(0)->clear_kernels();
  EXPECT_NE(error(q).find("states entry 0: holds no kernel or collective time"), std::string::npos) << error(q);
}

}  // namespace
}  // namespace tandem
