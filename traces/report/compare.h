// The numbers of `tandem compare`: two traces of one scenario, A (usually the prediction, sim/) and
// B (the reference, usually the measurement, exec/), set side by side task by task. Every relative
// error is (A - B) / B: negative when A is faster than B.
//
// What is compared (docs/reports.md explains each choice):
//  - iteration time of a rank = its last event end minus its first event start; of a trace = the
//    largest over its ranks;
//  - busy time of a stream = the sum of its events' durations (a stream runs one task at a time);
//  - events are matched by (rank, task_id); per label (traces/task_label.h) and per coarse kind
//    (label_kind) the matched events give count, total time A and B, median and worst per-event
//    error, and a contribution to the iteration-time error: (sum A - sum B) / ranks compared, the
//    average per-rank time the label adds to A over B. Tables are sorted by |contribution|. It
//    counts work that overlaps other work as if it were on the critical path (traces do not carry
//    dependencies, so the critical path cannot be rebuilt from them alone);
//  - tasks present in one trace only are counted and the first few listed.
//
// Bounded memory: the per-event errors a median is taken over are kept exactly up to
// kMedianSampleCap per label (and per kind); beyond that a deterministic reservoir sample of that
// size is kept and the median is the sample's. Worst errors and totals are always exact.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "trace.pb.h"

namespace tandem {

inline constexpr size_t kMedianSampleCap = 1 << 16;
inline constexpr size_t kUnmatchedExamples = 20;

// (a - b) / b; 0 when both are 0; NaN (printed "n/a", JSON null) when only b is 0.
double relative_error(double a_s, double b_s);

struct CompareOptions {
  bool allow_different_scenarios = false;  // else Error when the scenario digests differ
  std::string name_a = "A", name_b = "B";  // shown in the report (the file names, say)
};

struct TimePair {
  double a_s = 0, b_s = 0;
  double error() const { return relative_error(a_s, b_s); }
};

struct StreamTimes {
  int stream = 0;  // tandem::Stream value
  TimePair busy;
  int64_t events_a = 0, events_b = 0;
};

struct RankComparison {
  int rank = 0;
  bool in_a = false, in_b = false;
  TimePair iteration;
  std::vector<StreamTimes> streams;  // the streams either trace used on this rank, by value
  int64_t peak_device_a_bytes = 0, peak_device_b_bytes = 0;
};

struct LabelComparison {
  std::string label;  // the label; for the kind table, the kind
  std::string kind;
  int64_t count = 0;  // matched events
  TimePair total;
  double median_error = 0, worst_error = 0;  // over matched events with B time > 0; NaN if none
  double contribution_s = 0;                  // (total.a_s - total.b_s) / ranks compared
};

struct UnmatchedTask {
  int rank = 0;
  uint32_t task_id = 0;
  std::string label;
  bool in_a = false;  // present in A only (else in B only)
};

struct TraceInfo {
  std::string name, scenario, digest, backend, machine;
  int world_size = 0;
  int ranks = 0;
  uint64_t events = 0;
  // A predicted trace's prediction interval of its iteration time (trace fields
  // iteration_time_low_s/high_s, sim/prediction_interval.h); none in measured traces.
  bool has_interval = false;
  double interval_low_s = 0, interval_high_s = 0;
  // What a calibrated host prediction's interval was made from (Trace.interval_evidence, written
  // by tandem sim: sim/prediction_interval_calibrated.h); has_evidence false for the default
  // interval (the GPU reference residuals) and for measured traces.
  bool has_evidence = false;
  proto::IntervalEvidence evidence;
  // A measured host trace's machine state probe (Trace.state_probe, taken by tandem run after
  // its steps: traces/calibration/machine_state_probe.h).
  bool has_state_probe = false;
  proto::StateProbe state_probe;
};

// One line: the evidence's name, the calibration runs' spread, the bench's residuals, and the
// state ratios when the prediction was scaled to a probe ("calibration-spread+host-bench-residuals:
// the 3 calibration runs' spread +-4.1 % and the host twin bench's residuals (33 rows, q10 0.894,
// q50 0.995, q90 1.098), the wider per side").
std::string interval_evidence_text(const proto::IntervalEvidence& e);

// The spread of the measured steps a trace was taken from (Rank.step_times_s, written by tandem
// run): per step the slowest rank's time, over the steady-state steps (the first, warm-up, left
// out when there are more than one); quartiles by linear interpolation. steps == 0 when the trace
// carries no step times (a prediction).
struct StepSpreadInfo {
  int steps = 0;
  double min_s = 0, q1_s = 0, median_s = 0, q3_s = 0, max_s = 0;
  // (q3 - q1) / median: an error smaller than about half of it cannot be told from noise.
  double relative_iqr() const { return median_s > 0 ? (q3_s - q1_s) / median_s : 0; }
};
StepSpreadInfo step_spread_of(const proto::Trace& t);

struct Comparison {
  TraceInfo a, b;
  StepSpreadInfo spread_a, spread_b;
  bool same_scenario = true;
  TimePair iteration;
  int ranks_compared = 0;                 // ranks present in both traces
  std::vector<RankComparison> ranks;      // every rank of either trace, by rank
  std::vector<StreamTimes> streams;       // summed over the ranks of each trace
  std::vector<LabelComparison> labels;    // sorted by |contribution_s|, then label
  std::vector<LabelComparison> kinds;     // likewise
  int64_t matched = 0, only_a = 0, only_b = 0;
  int64_t label_mismatches = 0;           // matched events whose labels differ (A's label is used)
  std::vector<UnmatchedTask> unmatched;   // the first kUnmatchedExamples, in (rank, task) order
  int slowest_rank = -1;                  // largest iteration time in B (A if B has no ranks)
  int peak_memory_rank = -1;              // largest peak device bytes in B (A if B has no memory)
};

// Error (exit code 2) when a trace breaks a rule of check_trace (traces/trace_io.h); when a trace
// holds no rank record or no event (there is nothing to compare: the report would say -100 %);
// when A is measured (backend host or cuda) and B predicted (sim), the roles swapped: the message
// says to call it the other way round (two measured or two predicted traces are compared, strategy
// against strategy); naming both digests when the traces ran different scenarios and
// options.allow_different_scenarios is false.
Comparison compare_traces(const proto::Trace& a, const proto::Trace& b, const CompareOptions& options = {});

// One JSON object: {"format":"tandem-compare-1", "a":{...}, "b":{...}, "headline":{...},
// (headline: ..., "a_interval_s": [low, high] or null, "b_in_a_interval": true/false/null,
// "a_interval_evidence": {name, calibration_runs, calibration_spread_half_width, host_bench_residuals,
// state_ratios} or null, "b_state_probe": {...} or null),
// "streams":[...], "ranks":[...], "kinds":[...], "labels":[...], "unmatched":[...]}; times in
// seconds, errors as fractions (null when undefined).
std::string comparison_json(const Comparison& c);

// Whether B's iteration time lies within A's prediction interval (bounds included): 1 yes, 0 no,
// -1 when A carries no interval.
int b_in_a_interval(const Comparison& c);

// A few lines for the terminal: the headline and the five kinds that contribute most.
std::string comparison_text(const Comparison& c);

// "+12.3%", "-9.09%", "n/a": three significant digits.
std::string format_error(double error);
// "1.23 s", "45.6 ms", "789 us", "12.0 ns".
std::string format_seconds(double s);

}  // namespace tandem
