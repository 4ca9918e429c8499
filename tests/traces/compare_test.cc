#include "traces/report/compare.h"

#include <gtest/gtest.h>

#include <cmath>

#include "json_parser.h"
#include "reference_trace.h"
#include "shared/error.h"
#include "shared/scenario.h"
#include "trace_test_util.h"
#include "traces/trace_builder.h"
#include "traces/trace_io.h"

namespace tandem {
namespace {

using testing::Json;
using testing::JsonParser;

// The sample program's tasks (trace_test_util.h) run one after another from t = 0 with these
// durations: alloc, gemm, all-reduce, send, recv, h2d, attention, layernorm, free.
constexpr double kDurations[testing::kSampleTasks] = {0, 0.5, 0.25, 0.125, 0.125, 0.25, 1.0, 0.25, 0};

// `gemm_factor` scales the gemm (task 1); `skip` = {rank, task} leaves one task out.
proto::Trace serial_trace(const Schedule& s, double gemm_factor, std::pair<int, int> skip = {-1, -1},
                          int ranks = 2) {
  TraceBuilder b(s, "sim", "test");
  for (int rank = 0; rank < ranks; ++rank) {
    b.begin_rank(s.program(rank));
    double t = 0;
    for (int task = 0; task < testing::kSampleTasks; ++task) {
      const double d = kDurations[task] * (task == 1 ? gemm_factor : 1.0);
      if (std::make_pair(rank, task) != skip) b.task(rank, TaskId(task), t, t + d);
      t += d;
    }
    b.memory(rank, 0.0, 0, 0);
    b.memory(rank, 0.0, 48 * testing::kMiB, 0);
    b.memory(rank, t, 0, 0);
  }
  return b.finish();
}

const LabelComparison& find(const std::vector<LabelComparison>& v, const std::string& key) {
  for (const LabelComparison& l : v)
    if (l.label == key) return l;
  throw std::runtime_error("no " + key);
}

TEST(Compare, RelativeErrorIsAMinusBOverB) {
  EXPECT_DOUBLE_EQ(relative_error(0.9, 1.0), -0.1);
  EXPECT_DOUBLE_EQ(relative_error(1.2, 1.0), 0.2);
  EXPECT_EQ(relative_error(0, 0), 0.0);
  EXPECT_TRUE(std::isnan(relative_error(1, 0)));
  EXPECT_EQ(format_error(-1.0 / 11), "-9.09%");
  EXPECT_EQ(format_error(0.125), "+12.5%");
  EXPECT_EQ(format_error(-2e-16), "0.00%");  // rounding noise of equal times
  EXPECT_EQ(format_seconds(-1e-22), "0 s");
  EXPECT_EQ(format_error(std::nan("")), "n/a");
  EXPECT_EQ(format_seconds(2.5), "2.50 s");
  EXPECT_EQ(format_seconds(0.0125), "12.5 ms");
  EXPECT_EQ(format_seconds(42e-6), "42.0 us");
}

// B = A with the GEMM 10% slower: b = 1.1 a, so the GEMM's error is (a - 1.1a) / 1.1a = -1/11,
// every other kind's 0. Per rank A runs 2.5 s of work back to back and B 2.55 s: the iteration
// error is -0.05 / 2.55 = -1/51. The compute stream (gemm, attention, layernorm) is busy 1.75 s
// in A and 1.8 s in B on each rank: -0.05 / 1.8 = -1/36. The GEMM's contribution per rank is
// (2 * 0.5 - 2 * 0.55) / 2 ranks = -0.05 s, all of the iteration difference.
TEST(Compare, GemmTenPercentSlowerInB) {
  Schedule s = testing::sample_schedule();
  const proto::Trace a = serial_trace(s, 1.0), b = serial_trace(s, 1.1);
  const Comparison c = compare_traces(a, b);

  EXPECT_DOUBLE_EQ(c.iteration.a_s, 2.5);
  EXPECT_DOUBLE_EQ(c.iteration.b_s, 2.55);
  EXPECT_NEAR(c.iteration.error(), -1.0 / 51, 1e-12);
  EXPECT_EQ(c.ranks_compared, 2);
  EXPECT_EQ(c.matched, 2 * testing::kSampleTasks);
  EXPECT_EQ(c.only_a, 0);
  EXPECT_EQ(c.only_b, 0);
  EXPECT_EQ(c.label_mismatches, 0);
  ASSERT_EQ(c.ranks.size(), 2u);
  for (const RankComparison& r : c.ranks) {
    EXPECT_NEAR(r.iteration.error(), -1.0 / 51, 1e-12);
    EXPECT_EQ(r.peak_device_a_bytes, 48 * testing::kMiB);
    ASSERT_EQ(r.streams.size(), 5u);  // compute, comm, send-fwd, recv-bwd, h2d
    EXPECT_EQ(r.streams[0].stream, int(Stream::kCompute));
    EXPECT_NEAR(r.streams[0].busy.a_s, 1.75, 1e-12);
    EXPECT_NEAR(r.streams[0].busy.b_s, 1.80, 1e-12);
  }
  ASSERT_EQ(c.streams.size(), 5u);
  EXPECT_NEAR(c.streams[0].busy.error(), -1.0 / 36, 1e-12);
  EXPECT_NEAR(c.streams[1].busy.error(), 0.0, 1e-12);  // comm

  const LabelComparison& gemm = c.labels.front();  // the only label that contributes
  EXPECT_EQ(gemm.label, "gemm 2048x4608x12288 fp16");
  EXPECT_EQ(gemm.count, 2);
  EXPECT_DOUBLE_EQ(gemm.total.a_s, 1.0);
  EXPECT_DOUBLE_EQ(gemm.total.b_s, 1.1);
  EXPECT_NEAR(gemm.median_error, -1.0 / 11, 1e-12);
  EXPECT_NEAR(gemm.worst_error, -1.0 / 11, 1e-12);
  EXPECT_NEAR(gemm.total.error(), -1.0 / 11, 1e-12);
  EXPECT_NEAR(gemm.contribution_s, -0.05, 1e-12);
  EXPECT_EQ(c.kinds.front().kind, "gemm");
  EXPECT_NEAR(c.kinds.front().median_error, -1.0 / 11, 1e-12);

  const LabelComparison& attention = find(c.labels, "attention b1 s2048 h12 d128 fp16");
  // 0 but for rounding: B's attention starts 0.05 s later, so end - start may differ in the last bit.
  EXPECT_NEAR(attention.median_error, 0.0, 1e-12);
  EXPECT_NEAR(attention.contribution_s, 0.0, 1e-12);
  const LabelComparison& alloc = find(c.labels, "alloc");
  EXPECT_EQ(alloc.count, 2);
  EXPECT_TRUE(std::isnan(alloc.median_error));  // no event with a B time > 0
  EXPECT_EQ(find(c.kinds, "all-reduce").count, 2);

  // Slowest rank: both equal, the first wins; the peak rank likewise.
  EXPECT_EQ(c.slowest_rank, 0);
  EXPECT_EQ(c.peak_memory_rank, 0);
}

// The median is over events: three GEMMs with errors -0.5, 0 and +1 have median 0 and worst +1.
TEST(Compare, MedianAndWorstOverEvents) {
  std::vector<Program> programs(1);
  programs[0].rank = 0;
  for (int i = 0; i < 3; ++i) {
    Task t;
    t.id = TaskId(i);
    t.op = testing::compute(Kernel::kGemm, DType::kFp16, {64, 64, 64});
    programs[0].tasks.push_back(t);
  }
  Schedule s(testing::sample_scenario(), 1, {}, std::make_unique<testing::FixedGenerator>(programs));
  const double da[3] = {0.5, 1.0, 2.0}, db[3] = {1.0, 1.0, 1.0};
  auto trace = [&](const double* d) {
    TraceBuilder b(s, "sim", "");
    b.begin_rank(s.program(0));
    double t = 0;
    for (int i = 0; i < 3; ++i) b.task(0, TaskId(i), t, t + d[i]), t += d[i];
    return b.finish();
  };
  const Comparison c = compare_traces(trace(da), trace(db));
  ASSERT_EQ(c.labels.size(), 1u);
  EXPECT_EQ(c.labels[0].median_error, 0.0);
  EXPECT_EQ(c.labels[0].worst_error, 1.0);
  EXPECT_DOUBLE_EQ(c.labels[0].total.error(), 0.5 / 3);  // 3.5 s against 3 s
  EXPECT_DOUBLE_EQ(c.labels[0].contribution_s, 0.5);      // one rank
}

TEST(Compare, ReportsTasksAndRanksInOneTraceOnly) {
  Schedule s = testing::sample_schedule();
  // A: both ranks, every task. B: rank 0 only, without its layernorm (task 7).
  const proto::Trace a = serial_trace(s, 1.0), b = serial_trace(s, 1.0, {0, 7}, 1);
  const Comparison c = compare_traces(a, b);
  EXPECT_EQ(c.ranks_compared, 1);
  EXPECT_EQ(c.matched, testing::kSampleTasks - 1);
  EXPECT_EQ(c.only_a, 1 + testing::kSampleTasks);
  EXPECT_EQ(c.only_b, 0);
  ASSERT_EQ(c.unmatched.size(), size_t(1 + testing::kSampleTasks));
  EXPECT_EQ(c.unmatched[0].rank, 0);
  EXPECT_EQ(c.unmatched[0].task_id, 7u);
  EXPECT_EQ(c.unmatched[0].label, "layernorm 2048x12288 fp16");
  EXPECT_TRUE(c.unmatched[0].in_a);
  EXPECT_EQ(c.unmatched[1].rank, 1);
  ASSERT_EQ(c.ranks.size(), 2u);
  EXPECT_TRUE(c.ranks[1].in_a);
  EXPECT_FALSE(c.ranks[1].in_b);
  EXPECT_EQ(c.slowest_rank, 0);  // B's slowest: B has rank 0 only
  // Swapped: the same events are now in B only.
  const Comparison d = compare_traces(b, a);
  EXPECT_EQ(d.only_a, 0);
  EXPECT_EQ(d.only_b, 1 + testing::kSampleTasks);
  EXPECT_FALSE(d.unmatched[0].in_a);
}

TEST(Compare, RefusesDifferentScenariosUnlessAllowed) {
  Schedule s = testing::sample_schedule();
  const proto::Trace a = serial_trace(s, 1.0);
  proto::Trace b = serial_trace(s, 1.1);
  b.set_scenario_digest("0123456789abcdef");
  try {
    compare_traces(a, b);
    FAIL() << "expected an Error";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    const std::string what = e.what();
    EXPECT_NE(what.find("different scenarios"), std::string::npos) << what;
    EXPECT_NE(what.find("0123456789abcdef"), std::string::npos) << what;
    EXPECT_NE(what.find(a.scenario_digest()), std::string::npos) << what;
    EXPECT_NE(what.find("--allow-different-scenarios"), std::string::npos) << what;
  }
  CompareOptions allow;
  allow.allow_different_scenarios = true;
  const Comparison c = compare_traces(a, b, allow);
  EXPECT_FALSE(c.same_scenario);
  EXPECT_NEAR(c.iteration.error(), -1.0 / 51, 1e-12);
}

TEST(Compare, RefusesABrokenTrace) {
  Schedule s = testing::sample_schedule();
  proto::Trace a = serial_trace(s, 1.0);
  a.mutable_ranks(0)->mutable_events()->add_end_s(1.0);  // one column longer than the others
  EXPECT_THROW(compare_traces(a, serial_trace(s, 1.0)), Error);
}

// The message of the Error compare_traces throws ("" if it throws none).
std::string compare_error(const proto::Trace& a, const proto::Trace& b) {
  CompareOptions names;
  names.name_a = "a.trace";
  names.name_b = "b.trace";
  try {
    compare_traces(a, b, names);
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  return "";
}

// A is the prediction, B the reference: a measured A against a predicted B is refused with the
// call the other way round; two traces of one kind (strategy against strategy) are compared.
TEST(Compare, RefusesRolesSwapped) {
  Schedule s = testing::sample_schedule();
  proto::Trace predicted = serial_trace(s, 1.0), measured = serial_trace(s, 1.1);
  measured.set_backend("host");
  const std::string err = compare_error(measured, predicted);
  EXPECT_NE(err.find("A (a.trace) is measured (backend host) and B (b.trace) is predicted (backend sim)"),
            std::string::npos) << err;
  EXPECT_NE(err.find("call `tandem compare b.trace a.trace`"), std::string::npos) << err;
  measured.set_backend("cuda");
  EXPECT_NE(compare_error(measured, predicted).find("roles are swapped"), std::string::npos);

  EXPECT_EQ(compare_error(predicted, measured), "");
  EXPECT_EQ(compare_error(measured, measured), "");
  EXPECT_EQ(compare_error(predicted, predicted), "");
}

// A trace without rank records, or with rank records but no event, has nothing to compare: the
// report would say -100 %.
TEST(Compare, RefusesATraceWithNothingToCompare) {
  Schedule s = testing::sample_schedule();
  const proto::Trace full = serial_trace(s, 1.0);
  proto::Trace empty = full;
  empty.clear_ranks();
  empty.set_event_count(0);
  EXPECT_NE(compare_error(full, empty).find("trace b.trace holds no rank records: nothing to compare"),
            std::string::npos);
  EXPECT_NE(compare_error(empty, full).find("trace a.trace holds no rank records"), std::string::npos);
  proto::Trace no_events = full;
  for (proto::Rank& r : *no_events.mutable_ranks()) r.mutable_events()->Clear();
  no_events.set_event_count(0);
  EXPECT_NE(compare_error(full, no_events).find("trace b.trace holds 2 rank records but no event"),
            std::string::npos);
}

TEST(Compare, JsonHoldsTheSameNumbers) {
  Schedule s = testing::sample_schedule();
  const Comparison c = compare_traces(serial_trace(s, 1.0), serial_trace(s, 1.1));
  const Json root = JsonParser::parse(comparison_json(c));
  EXPECT_EQ(root.at("format").string, "tandem-compare-1");
  const Json& h = root.at("headline");
  EXPECT_EQ(h.at("iteration_a_s").number, 2.5);
  EXPECT_EQ(h.at("iteration_b_s").number, 2.55);
  EXPECT_NEAR(h.at("error").number, -1.0 / 51, 1e-12);
  EXPECT_EQ(h.at("matched_events").number, 18);
  EXPECT_EQ(h.at("only_in_a").number, 0);
  EXPECT_EQ(root.at("ranks").array.size(), 2u);
  EXPECT_EQ(root.at("ranks").array[1].at("rank").number, 1);
  EXPECT_EQ(root.at("ranks").array[1].at("streams").array[0].at("stream").string, "compute");
  const Json& gemm = root.at("kinds").array.at(0);
  EXPECT_EQ(gemm.at("kind").string, "gemm");
  EXPECT_NEAR(gemm.at("median_error").number, -1.0 / 11, 1e-12);
  EXPECT_NEAR(gemm.at("contribution_s").number, -0.05, 1e-12);
  EXPECT_EQ(root.at("labels").array.at(0).at("label").string, "gemm 2048x4608x12288 fp16");
  // alloc has no defined median: null.
  bool saw_null = false;
  for (const Json& k : root.at("kinds").array)
    if (k.at("kind").string == "alloc") saw_null = k.at("median_error").type == Json::kNull;
  EXPECT_TRUE(saw_null);
  EXPECT_EQ(root.at("streams").array.size(), 5u);
}

// A predicted trace carries its prediction interval: B (2.55 s) lies in [2.4, 2.6] and not in
// [2.4, 2.5]; the bounds count as inside; a trace without one gives null.
TEST(Compare, MeasurementAgainstThePredictionInterval) {
  Schedule s = testing::sample_schedule();
  proto::Trace a = serial_trace(s, 1.0);
  const proto::Trace b = serial_trace(s, 1.1);
  Comparison c = compare_traces(a, b);
  EXPECT_FALSE(c.a.has_interval);
  EXPECT_EQ(b_in_a_interval(c), -1);
  Json root = JsonParser::parse(comparison_json(c));
  EXPECT_EQ(root.at("headline").at("a_interval_s").type, Json::kNull);
  EXPECT_EQ(root.at("headline").at("b_in_a_interval").type, Json::kNull);
  EXPECT_EQ(comparison_text(c).find("prediction interval"), std::string::npos);

  a.set_iteration_time_low_s(2.4);
  a.set_iteration_time_high_s(2.6);
  c = compare_traces(a, b);
  EXPECT_EQ(b_in_a_interval(c), 1);
  root = JsonParser::parse(comparison_json(c));
  ASSERT_EQ(root.at("headline").at("a_interval_s").array.size(), 2u);
  EXPECT_EQ(root.at("headline").at("a_interval_s").array[0].number, 2.4);
  EXPECT_EQ(root.at("headline").at("a_interval_s").array[1].number, 2.6);
  EXPECT_TRUE(root.at("headline").at("b_in_a_interval").boolean);
  EXPECT_NE(comparison_text(c).find("prediction interval of A: 2.40 s .. 2.60 s: B inside"), std::string::npos)
      << comparison_text(c);

  a.set_iteration_time_high_s(2.5);
  c = compare_traces(a, b);
  EXPECT_EQ(b_in_a_interval(c), 0);
  EXPECT_NE(comparison_text(c).find("B outside"), std::string::npos);
  a.set_iteration_time_high_s(2.55);  // B exactly on the bound
  EXPECT_EQ(b_in_a_interval(compare_traces(a, b)), 1);
}

// A calibrated host prediction carries what its interval was made from (Trace.interval_evidence,
// sim/prediction_interval_calibrated.h): compare shows it beside the error and the measured spread,
// in the text, the JSON headline and the HTML page; the default interval and a measured trace's
// state probe likewise (null / absent when the trace has none).
TEST(Compare, ShowsTheIntervalsEvidenceAndTheMeasuredStateProbe) {
  Schedule s = testing::sample_schedule();
  proto::Trace a = serial_trace(s, 1.0);
  proto::Trace b = serial_trace(s, 1.1);
  a.set_iteration_time_low_s(2.2);
  a.set_iteration_time_high_s(2.8);
  Comparison c = compare_traces(a, b);
  EXPECT_FALSE(c.a.has_evidence);
  Json root = JsonParser::parse(comparison_json(c));
  EXPECT_EQ(root.at("headline").at("a_interval_evidence").type, Json::kNull);
  EXPECT_EQ(root.at("headline").at("b_state_probe").type, Json::kNull);
  EXPECT_EQ(comparison_text(c).find("interval evidence"), std::string::npos);

  proto::IntervalEvidence& e = *a.mutable_interval_evidence();
  e.set_name("calibration-spread+host-bench-residuals");
  e.set_calibration_runs(3);
  e.set_calibration_spread_half_width(0.041);
  e.set_bench_rows(33);
  e.set_bench_q10(0.894);
  e.set_bench_q50(0.995);
  e.set_bench_q90(1.098);
  proto::StateProbe& p = *b.mutable_state_probe();
  p.set_allreduce_256b_s(4.5e-7);
  p.set_allreduce_16kib_s(2.7e-6);
  p.set_zero_fill_1mib_s(7.1e-6);
  p.set_compute_s(2.4e-6);
  c = compare_traces(a, b);
  ASSERT_TRUE(c.a.has_evidence);
  ASSERT_TRUE(c.b.has_state_probe);
  const std::string text = comparison_text(c);
  EXPECT_NE(text.find("interval evidence: calibration-spread+host-bench-residuals: the 3 calibration runs' spread "
                      "+-4.1 % and the host twin bench's residuals (33 rows, q10 0.894, q50 0.995, q90 1.098), the "
                      "wider per side\n"),
            std::string::npos)
      << text;
  root = JsonParser::parse(comparison_json(c));
  const Json& ev = root.at("headline").at("a_interval_evidence");
  EXPECT_EQ(ev.at("name").string, "calibration-spread+host-bench-residuals");
  EXPECT_EQ(ev.at("calibration_runs").number, 3);
  EXPECT_EQ(ev.at("calibration_spread_half_width").number, 0.041);
  EXPECT_EQ(ev.at("host_bench_residuals").at("rows").number, 33);
  EXPECT_EQ(ev.at("host_bench_residuals").at("q50").number, 0.995);
  EXPECT_EQ(ev.at("state_ratios").type, Json::kNull);
  EXPECT_EQ(root.at("headline").at("b_state_probe").at("zero_fill_1mib_s").number, 7.1e-6);

  // Scaled to a state probe: the three ratios follow; a profile with no run spread says so.
  e.set_state_communication_ratio(1.25);
  e.set_state_memory_ratio(1.5);
  e.set_state_compute_ratio(1.125);
  e.set_calibration_spread_half_width(-1);
  e.set_name("host-bench-residuals");
  c = compare_traces(a, b);
  EXPECT_NE(comparison_text(c).find("interval evidence: host-bench-residuals: the host twin bench's residuals (33 "
                                    "rows, q10 0.894, q50 0.995, q90 1.098), the wider per side; scaled to the "
                                    "machine's state probed before the run: collectives x1.250, Allocs/Frees x1.500, "
                                    "kernels x1.125\n"),
            std::string::npos)
      << comparison_text(c);
  root = JsonParser::parse(comparison_json(c));
  EXPECT_EQ(root.at("headline").at("a_interval_evidence").at("calibration_spread_half_width").type, Json::kNull);
  EXPECT_EQ(root.at("headline").at("a_interval_evidence").at("state_ratios").at("memory").number, 1.5);
}

// A generated schedule (tiny GPT, tensor 2 x pipeline 2) run by the reference executor with two
// cost functions: every task matches, the iteration times are the runs' makespans, and the kinds
// B slows down have the errors the cost functions give them.
TEST(Compare, GeneratedScheduleUnderTwoCostFunctions) {
  Schedule s(load_scenario(TANDEM_SOURCE_DIR "/scenarios/tiny-gpt.textproto",
                           {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"}));
  const proto::Trace a = testing::reference_trace(s, testing::prediction_cost, "sim", "cost A");
  const proto::Trace b = testing::reference_trace(s, testing::measurement_cost, "host", "cost B");
  const Comparison c = compare_traces(a, b);
  EXPECT_EQ(c.only_a, 0);
  EXPECT_EQ(c.only_b, 0);
  EXPECT_EQ(uint64_t(c.matched), a.event_count());
  EXPECT_EQ(c.ranks_compared, 4);
  EXPECT_NEAR(c.iteration.a_s, run_reference(s, testing::prediction_cost).makespan_s, 1e-12);
  EXPECT_NEAR(c.iteration.b_s, run_reference(s, testing::measurement_cost).makespan_s, 1e-12);
  EXPECT_LT(c.iteration.error(), 0);  // B is slower overall
  // gemm: b = 1.25 a on every event, so every error is -0.2; attention: b = 0.9 a, +1/9.
  const LabelComparison& gemm = find(c.kinds, "gemm");
  EXPECT_NEAR(gemm.median_error, -0.2, 1e-12);
  EXPECT_NEAR(gemm.worst_error, -0.2, 1e-12);
  EXPECT_NEAR(find(c.kinds, "attention").median_error, 1.0 / 9, 1e-12);
  EXPECT_NEAR(find(c.kinds, "layernorm").median_error, 0.0, 1e-12);
  EXPECT_LT(find(c.kinds, "all-reduce").worst_error, -1.0 / 3 + 1e-12);  // 1.5x plus latency
  EXPECT_GT(c.peak_memory_rank, -1);
  EXPECT_GT(c.ranks[size_t(c.peak_memory_rank)].peak_device_b_bytes, 0);
  // Sorted by |contribution|.
  for (size_t i = 1; i < c.kinds.size(); ++i)
    EXPECT_GE(std::fabs(c.kinds[i - 1].contribution_s), std::fabs(c.kinds[i].contribution_s));
}

}  // namespace
}  // namespace tandem
