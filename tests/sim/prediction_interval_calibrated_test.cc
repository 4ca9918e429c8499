// A host-calibrated prediction's interval (sim/prediction_interval_calibrated.h): the calibration
// runs' spread and the host twin bench's residuals, on numbers derived by hand below; an
// uncalibrated prediction keeps the GPU reference residuals and its JSON as before.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>

#include "shared/error.h"
#include "sim/prediction_interval_calibrated.h"
#include "sim/sim_report.h"
#include "sim/simulation.h"
#include "traces/calibration/calibration_profile.h"
#include "traces/calibration/machine_state_probe.h"
#include "traces/calibration/machine_states.h"
#include "host_profile_util.h"
#include "sim_test_util.h"

namespace tandem::sim {
namespace {

// q10..q90 half-width of a normal per IQR: 1.2815516 / 1.3489795 = 0.9500156.
constexpr double kPerIqr = 0.9500156;

HostBenchResiduals bench(double q10, double q50, double q90) {
  std::ostringstream t;
  t << "# test\nrows\tq10\tq50\tq90\n30\t" << q10 << "\t" << q50 << "\t" << q90 << "\n";
  return HostBenchResiduals::parse(t.str(), "test.tsv");
}

TEST(CalibratedInterval, OneRunsStepSpreadIsNinetyFiveHundredthsOfItsIqr) {
  // One run of 39 steady-state steps whose steps spread 10 % (IQR over median): 0.95 x 0.10.
  EXPECT_NEAR(calibration_spread_half_width({{39, 20e-3, 0.10}}), 0.0950016, 1e-6);
  // A run of one steady step carries no spread, and one run has no run-to-run spread: none.
  EXPECT_LT(calibration_spread_half_width({{1, 20e-3, 0}}), 0);
  EXPECT_LT(calibration_spread_half_width({}), 0);
}

TEST(CalibratedInterval, SeveralRunsAddTheirRunToRunSpreadInQuadrature) {
  // Three runs: iterations 10, 11, 12 ms, step IQRs 4, 10, 6 %. Step part: 0.95 x median(IQR)
  // = 0.9500156 x 0.06 = 0.0570009. Run to run: mean 11 ms, sample SD sqrt((1 + 0 + 1) / 2) = 1 ms,
  // over the median 11 ms: 0.0909091; x 1.2815516 = 0.1165047. Together
  // sqrt(0.0570009^2 + 0.1165047^2) = sqrt(0.00324910 + 0.01357334) = 0.1297014.
  EXPECT_NEAR(calibration_spread_half_width({{39, 10e-3, 0.04}, {39, 11e-3, 0.10}, {39, 12e-3, 0.06}}), 0.1297014,
              1e-6);
  // Two runs of one step each: the run-to-run part alone. 10 and 12 ms: SD sqrt(2) ms over the
  // median 11 ms = 0.1285649; x 1.2815516 = 0.1647632.
  EXPECT_NEAR(calibration_spread_half_width({{1, 10e-3, 0}, {1, 12e-3, 0}}), 0.1647632, 1e-6);
}

TEST(CalibratedInterval, TheWiderOfSpreadAndBenchOnEachSide) {
  const HostBenchResiduals b = bench(0.95, 1.0, 1.03);
  // A noisy calibration (one run, IQR 10 %: h = 0.0950016) is wider than the bench on both sides
  // (0.05 below, 0.03 above): t = 20 ms gives [20 (1 - 0.0950016), 20 (1 + 0.0950016)]
  // = [18.099969, 21.900031] ms.
  CalibratedInterval c = calibrated_interval(20e-3, {{39, 20e-3, 0.10}}, b);
  EXPECT_EQ(c.evidence, IntervalEvidence::kCalibrationSpreadAndHostBench);
  EXPECT_NEAR(c.spread_half_width, 0.0950016, 1e-6);
  EXPECT_NEAR(c.interval.low_s, 18.099969e-3, 1e-8);
  EXPECT_NEAR(c.interval.high_s, 21.900031e-3, 1e-8);
  // A quiet one (IQR 4 %: h = 0.0380006) is wider only above (0.03): [20 x 0.95, 20 x 1.0380006]
  // = [19.0, 20.760012] ms.
  c = calibrated_interval(20e-3, {{39, 20e-3, 0.04}}, b);
  EXPECT_NEAR(c.interval.low_s, 19.0e-3, 1e-10);
  EXPECT_NEAR(c.interval.high_s, 20.760012e-3, 1e-8);
}

TEST(CalibratedInterval, WithoutRunsTheBenchAloneAndItsBiasWithThePointInside) {
  // A profile that records no run (written before CalibrationProfile.runs): the bench's
  // residuals alone, [q10 t, q90 t] = [0.8 x 10, 0.95 x 10] around its median 0.9, and the
  // interval reaches to t itself on the side the bias leaves out: [8, 10].
  const CalibratedInterval c = calibrated_interval(10, {}, bench(0.8, 0.9, 0.95));
  EXPECT_EQ(c.evidence, IntervalEvidence::kHostBench);
  EXPECT_LT(c.spread_half_width, 0);
  EXPECT_NEAR(c.interval.low_s, 8, 1e-12);
  EXPECT_NEAR(c.interval.high_s, 10, 1e-12);
  EXPECT_STREQ(interval_evidence_name(c.evidence), "host-bench-residuals");
  EXPECT_STREQ(interval_evidence_name(IntervalEvidence::kReferenceResiduals), "reference-residuals");
}

TEST(CalibratedInterval, TheTableRefusesWhatWouldNotCombine) {
  auto error_of = [](const std::string& text) {
    try {
      HostBenchResiduals::parse(text, "t.tsv");
    } catch (const Error& e) {
      EXPECT_EQ(e.exit_code(), 2);
      return std::string(e.what());
    }
    return std::string();
  };
  EXPECT_NE(error_of("rows\tq10\tq50\tq90\n3\t1.1\t1.0\t1.2\n").find("t.tsv:2: fields q10 <= q50 <= q90"),
            std::string::npos);
  EXPECT_NE(error_of("rows\tq10\tq50\n").find("t.tsv:1: the header"), std::string::npos);
  EXPECT_NE(error_of("rows\tq10\tq50\tq90\n3\t0.9\t1\t1.1\n3\t0.9\t1\t1.1\n").find("t.tsv:3: a second data line"),
            std::string::npos);
  EXPECT_NE(error_of("rows\tq10\tq50\tq90\n").find("no data line"), std::string::npos);
  EXPECT_NE(error_of("rows\tq10\tq50\tq90\n2.5\t0.9\t1\t1.1\n").find("whole number"), std::string::npos);
  EXPECT_NE(error_of("rows\tq10\tq50\tq90\n3\t0\t1\t1.1\n").find("field q10 '0'"), std::string::npos);
}

TEST(CalibratedInterval, TheBuiltinTableIsTheBenchsAndSaysWhereItCameFrom) {
  const HostBenchResiduals& b = HostBenchResiduals::builtin();
  EXPECT_GE(b.rows, 1);
  EXPECT_LE(b.q10, b.q50);
  EXPECT_LE(b.q50, b.q90);
  std::string header;
  for (const std::string& l : b.header) header += l + "\n";
  EXPECT_NE(header.find("tests/bench/host_twin_error.py"), std::string::npos) << header;
  EXPECT_NE(header.find("at commit"), std::string::npos) << header;
}

Compute gemm8() { return Compute{Kernel::kGemm, DType::kFp32, Phase::kForward, 0, -1, -1, {8, 8, 8, 0, 0, 0}, {}, {}}; }

// Three 10 us GEMMs with 2 us before each on one host rank: 36 us (tests/sim/host_cost_test.cc,
// TheTimeBetweenTasksIsRecordedBeforeTheKernelNotInIt).
Schedule three_gemms(const std::string& preset) {
  ClusterSpec cluster = testing::test_cluster(1);
  cluster.preset = preset;
  return Schedule(testing::test_scenario(cluster), 1, {}, std::make_unique<testing::LambdaGenerator>([](int rank) {
                    testing::ProgramWriter w(rank);
                    for (int i = 0; i < 3; ++i) w.add(Stream::kCompute, gemm8());
                    return w.p;
                  }));
}

// three_gemms("host") simulated with profile `p` predicted for the machine's state `now`
// (CalibrationTable::load(path, now), through a file named after `test` and this process).
SimResult three_gemms_for_state(const proto::CalibrationProfile& p, const MachineStateProbe& now,
                                const std::string& test) {
  const std::string path = "/tmp/tandem-" + test + "-" + std::to_string(getpid()) + ".pb";
  write_calibration(p, path);
  auto table = std::make_shared<const CalibrationTable>(CalibrationTable::load(path, now));
  std::remove(path.c_str());
  SimOptions o = testing::ideal_options();
  o.calibration = table;
  return simulate(three_gemms("host"), o);
}

std::string json_of(const Schedule& s, const SimResult& r) {
  std::ostringstream out;
  write_json(out, s, r);
  return out.str();
}

TEST(CalibratedInterval, AHostProfilesPredictionTakesItAndSaysSo) {
  // The profile records one calibration run whose steps spread 10 %: h = 0.0950016. The interval
  // of the 36 us prediction is then 36 us x (q50 -+ max(q50 - q10 or q90 - q50 of the compiled-in
  // bench table, h)), and the JSON and the summary name the evidence.
  proto::CalibrationProfile p = testing::host_profile(gemm8(), 10e-6, 2e-6);
  proto::CalibrationRun* run = p.add_runs();
  run->set_name("cal.trace");
  run->set_steps(39);
  run->set_iteration_s(36e-6);
  run->set_relative_iqr(0.10);
  auto table = std::make_shared<const CalibrationTable>(testing::load_profile(p, "calibrated-interval-test"));
  const Schedule s = three_gemms("host");
  SimOptions o = testing::ideal_options();
  o.calibration = table;
  const SimResult r = simulate(s, o);  // forked: the evidence comes back through the result codec
  ASSERT_NEAR(r.iteration_time_s, 36e-6, 1e-12);
  const HostBenchResiduals& b = HostBenchResiduals::builtin();
  const double h = 0.0950016;
  EXPECT_EQ(r.interval_evidence, IntervalEvidence::kCalibrationSpreadAndHostBench);
  EXPECT_EQ(r.interval_calibration_runs, 1);
  EXPECT_NEAR(r.interval_spread_half_width, h, 1e-6);
  EXPECT_NEAR(r.iteration_time_low_s, std::min(36e-6, 36e-6 * (b.q50 - std::max(b.q50 - b.q10, h))), 1e-10);
  EXPECT_NEAR(r.iteration_time_high_s, std::max(36e-6, 36e-6 * (b.q50 + std::max(b.q90 - b.q50, h))), 1e-10);
  const std::string j = json_of(s, r);
  EXPECT_NE(j.find("\"evidence\": \"calibration-spread+host-bench-residuals\""), std::string::npos) << j;
  EXPECT_NE(j.find("\"calibration_runs\": 1"), std::string::npos) << j;
  EXPECT_NE(j.find("\"calibration_spread_half_width\": 0.095"), std::string::npos) << j;
  EXPECT_NE(j.find("\"host_bench_residuals\": {\"rows\": " + std::to_string(b.rows)), std::string::npos) << j;
  std::ostringstream text;
  write_summary(text, s, r);
  EXPECT_NE(text.str().find("evidence calibration-spread+host-bench-residuals: the 1 calibration run's spread +-9.5 %"),
            std::string::npos)
      << text.str();
}

// A prediction scaled to the machine's state (--state-probe) takes the residuals of scaled
// predictions (host_twin_residuals_scaled.tsv), not the plain ones, and names that table. The probe
// now has the profile's compute time and 1.5x its zero fill (12 us against 8: ln 1.5 = 0.41, beyond
// the 12 % of traces/calibration/machine_states.h, so in no calibrated state and scaled): the
// kernels scale by 1, so the prediction is 36 us as above (the three GEMMs have no collective or
// Alloc for the 1.5 to scale) and h = 0.0950016; the bounds follow from the scaled table's quantiles.
TEST(CalibratedInterval, AStateScaledPredictionTakesTheScaledPredictionsResiduals) {
  const HostBenchResiduals& scaled = HostBenchResiduals::builtin(true);
  std::string header;
  for (const std::string& l : scaled.header) header += l + "\n";
  EXPECT_NE(header.find("scaled to the state probe"), std::string::npos) << header;
  EXPECT_NE(header.find("at commit"), std::string::npos) << header;
  proto::CalibrationProfile p = testing::host_profile(gemm8(), 10e-6, 2e-6);
  proto::CalibrationRun* run = p.add_runs();
  run->set_name("cal.trace"), run->set_steps(39), run->set_iteration_s(36e-6), run->set_relative_iqr(0.10);
  MachineStateProbe now;
  now.allreduce_256b_s = 0.5e-6, now.allreduce_16kib_s = 3e-6, now.zero_fill_1mib_s = 8e-6, now.compute_s = 2e-6;
  set_profile_state_probe(p, {now}, true);
  now.zero_fill_1mib_s = 12e-6;
  const Schedule s = three_gemms("host");
  const SimResult r = three_gemms_for_state(p, now, "scaled-interval-test");
  ASSERT_NEAR(r.iteration_time_s, 36e-6, 1e-12);
  EXPECT_DOUBLE_EQ(r.state_memory_ratio, 1.5);
  EXPECT_DOUBLE_EQ(r.state_compute_ratio, 1.0);
  EXPECT_FALSE(r.state_matched);
  EXPECT_TRUE(r.scaled_to_state());
  EXPECT_EQ(r.calibrated_state, 1);
  EXPECT_EQ(r.calibrated_states, 1);
  const double h = 0.0950016;
  EXPECT_NEAR(r.iteration_time_low_s, std::min(36e-6, 36e-6 * (scaled.q50 - std::max(scaled.q50 - scaled.q10, h))), 1e-10);
  EXPECT_NEAR(r.iteration_time_high_s, std::max(36e-6, 36e-6 * (scaled.q50 + std::max(scaled.q90 - scaled.q50, h))),
              1e-10);
  const std::string j = json_of(s, r);
  EXPECT_NE(j.find("\"host_bench_residuals\": {\"rows\": " + std::to_string(scaled.rows)), std::string::npos) << j;
  std::ostringstream text;
  write_summary(text, s, r);
  EXPECT_NE(text.str().find(std::to_string(scaled.rows) + " rows, traces/calibration/host_twin_residuals_scaled.tsv"),
            std::string::npos)
      << text.str();
}

// A probe that falls in one of the profile's calibrated machine states (traces/calibration/
// machine_states.h) takes that state's runs as measured: no scaling, the plain residual table, and
// the state's own runs for the spread. The profile pools three runs (kernel 10 us, as above) and
// holds two states: zero fill 8 us (two runs, kernel 10 us) and 11 us (one run, kernel 20 us, its
// iteration 66 us). A probe of 11.5 us (ln(11.5 / 11) = 0.044 <= 0.12; ln(11.5 / 8) = 0.36) falls
// in the second: three GEMMs of 20 us, each after the 2 us between kernels, 66 us; the interval's
// spread from that state's one run (IQR 0.10: h = 0.0950016, as the single run above), against the
// plain table's quantiles. Without the change the pooled 10 us kernel gave 36 us, scaled by 1.
TEST(CalibratedInterval, AProbeInACalibratedStatePredictsFromThatStatesRunsUnscaled) {
  const HostBenchResiduals& plain = HostBenchResiduals::builtin(false);
  proto::CalibrationProfile p = testing::host_profile(gemm8(), 10e-6, 2e-6);
  for (double it : {36e-6, 36e-6, 66e-6}) {
    proto::CalibrationRun* run = p.add_runs();
    run->set_name("cal.trace"), run->set_steps(39), run->set_iteration_s(it), run->set_relative_iqr(0.02);
  }
  MachineStateProbe fast, slow, now;
  fast.allreduce_256b_s = 0.5e-6, fast.allreduce_16kib_s = 3e-6, fast.zero_fill_1mib_s = 8e-6, fast.compute_s = 2e-6;
  slow = fast, slow.zero_fill_1mib_s = 11e-6, slow.compute_s = 2.2e-6;
  now = slow, now.zero_fill_1mib_s = 11.5e-6, now.compute_s = 2.6e-6;
  set_profile_state_probe(p, {fast, fast, slow}, true);
  proto::CalibrationProfile first = testing::host_profile(gemm8(), 10e-6, 2e-6);
  *first.mutable_runs() = {p.runs().begin(), p.runs().begin() + 2};
  set_profile_state_probe(first, {fast, fast}, true);
  proto::CalibrationProfile second = testing::host_profile(gemm8(), 20e-6, 2e-6);
  proto::CalibrationRun* run = second.add_runs();
  run->set_name("cal3.trace"), run->set_steps(39), run->set_iteration_s(66e-6), run->set_relative_iqr(0.10);
  set_profile_state_probe(second, {slow}, true);
  add_state(p, first);
  add_state(p, second);
  const Schedule s = three_gemms("host");
  const SimResult r = three_gemms_for_state(p, now, "state-matched-test");
  ASSERT_NEAR(r.iteration_time_s, 66e-6, 1e-12);
  EXPECT_TRUE(r.state_matched);
  EXPECT_FALSE(r.scaled_to_state());
  EXPECT_EQ(r.calibrated_state, 2);
  EXPECT_EQ(r.calibrated_states, 2);
  EXPECT_EQ(r.state_compute_ratio, 1.0);  // not 2.6 / 2.2: no scaling inside a state
  EXPECT_EQ(r.interval_calibration_runs, 1);
  const double h = 0.0950016;
  EXPECT_NEAR(r.iteration_time_low_s, std::min(66e-6, 66e-6 * (plain.q50 - std::max(plain.q50 - plain.q10, h))), 1e-10);
  EXPECT_NEAR(r.iteration_time_high_s, std::max(66e-6, 66e-6 * (plain.q50 + std::max(plain.q90 - plain.q50, h))), 1e-10);
  std::ostringstream text;
  write_summary(text, s, r);
  EXPECT_NE(text.str().find(std::to_string(plain.rows) + " rows, traces/calibration/host_twin_residuals.tsv"),
            std::string::npos)
      << text.str();
  EXPECT_NE(text.str().find("calibrated state 2 of 2, its runs' costs as measured"), std::string::npos) << text.str();
  const std::string j = json_of(s, r);
  EXPECT_NE(j.find("\"calibrated_state\": 2, \"calibrated_states\": 2, \"matched\": true"), std::string::npos) << j;
}

TEST(CalibratedInterval, AnUncalibratedOrTableCalibratedPredictionKeepsTheReferenceResiduals) {
  // No calibration: the GPU reference residuals (sim/prediction_interval.h) of the slowest rank's
  // busy time, and a JSON without the evidence keys (as before this interval existed).
  const Schedule s = three_gemms("host");
  const SimResult r = simulate(s, testing::ideal_options());
  EXPECT_EQ(r.interval_evidence, IntervalEvidence::kReferenceResiduals);
  const Interval ref = prediction_interval(r.iteration_time_s, r.ranks[size_t(r.slowest_rank)].component_s,
                                           ResidualTable::builtin());
  EXPECT_EQ(r.iteration_time_low_s, ref.low_s);
  EXPECT_EQ(r.iteration_time_high_s, ref.high_s);
  const std::string j = json_of(s, r);
  EXPECT_EQ(j.find("\"evidence\""), std::string::npos) << j;
  EXPECT_EQ(j.find("host_bench_residuals"), std::string::npos) << j;
  EXPECT_EQ(j.find("calibration_runs"), std::string::npos) << j;
  std::ostringstream text;
  write_summary(text, s, r);
  EXPECT_NE(text.str().find("from each cost component's residuals on the reference data"), std::string::npos)
      << text.str();
  // A hand-written text table is not a `tandem calibrate` profile: the reference residuals too.
  const std::string path = "/tmp/tandem-calibrated-interval-table-" + std::to_string(getpid()) + ".tsv";
  std::ofstream(path) << "gemm\tfp32\t8,8,8,0,0,0\t10\n";
  SimOptions o = testing::ideal_options();
  o.calibration = std::make_shared<const CalibrationTable>(CalibrationTable::load(path));
  std::remove(path.c_str());
  const SimResult t = simulate(s, o);
  EXPECT_EQ(t.interval_evidence, IntervalEvidence::kReferenceResiduals);
  const Interval tref = prediction_interval(t.iteration_time_s, t.ranks[size_t(t.slowest_rank)].component_s,
                                            ResidualTable::builtin());
  EXPECT_EQ(t.iteration_time_low_s, tref.low_s);
  EXPECT_EQ(t.iteration_time_high_s, tref.high_s);
}

}  // namespace
}  // namespace tandem::sim
