#include "traces/report/compare.h"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <unordered_map>

#include "shared/error.h"
#include "shared/schedule.h"
#include "shared/json_writer.h"
#include "traces/task_label.h"
#include "traces/trace_io.h"

namespace tandem {
namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

// Per-event errors of one label or kind: exact up to kMedianSampleCap, then a reservoir sample
// (Vitter's algorithm R) driven by a fixed-seed splitmix64, so that reports are reproducible.
class ErrorSample {
 public:
  void add(double error) {
    ++seen_;
    if (std::isnan(worst_) || std::fabs(error) > std::fabs(worst_)) worst_ = error;
    if (values_.size() < kMedianSampleCap) {
      values_.push_back(error);
      return;
    }
    const uint64_t j = next() % seen_;
    if (j < kMedianSampleCap) values_[j] = error;
  }
  double median() const {
    if (values_.empty()) return kNaN;
    std::vector<double> v = values_;
    const size_t mid = v.size() / 2;
    std::nth_element(v.begin(), v.begin() + mid, v.end());
    if (v.size() % 2 == 1) return v[mid];
    const double hi = v[mid];
    const double lo = *std::max_element(v.begin(), v.begin() + mid);
    return lo + (hi - lo) / 2;
  }
  double worst() const { return worst_; }

 private:
  uint64_t next() {
    uint64_t z = (state_ += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  std::vector<double> values_;
  uint64_t seen_ = 0;
  uint64_t state_ = 0x5eed;
  double worst_ = kNaN;
};

struct Accumulator {
  std::string label, kind;
  int64_t count = 0;
  TimePair total;
  ErrorSample errors;
};

struct RankView {
  const proto::Rank* rank = nullptr;
  double first_start_s = 0, last_end_s = 0;
  double busy_s[kStreamCount] = {};
  int64_t events[kStreamCount] = {};
};

RankView view(const proto::Rank* r) {
  RankView v;
  v.rank = r;
  if (!r) return v;
  const proto::Events& e = r->events();
  if (e.task_id_size() == 0) return v;
  v.first_start_s = std::numeric_limits<double>::infinity();
  v.last_end_s = -std::numeric_limits<double>::infinity();
  for (int i = 0; i < e.task_id_size(); ++i) {
    v.first_start_s = std::min(v.first_start_s, e.start_s(i));
    v.last_end_s = std::max(v.last_end_s, e.end_s(i));
    v.busy_s[e.stream(i)] += e.end_s(i) - e.start_s(i);
    ++v.events[e.stream(i)];
  }
  return v;
}

TraceInfo info(const proto::Trace& t, const std::string& name) {
  TraceInfo i;
  i.name = name;
  i.scenario = t.scenario_name();
  i.digest = t.scenario_digest();
  i.backend = t.backend();
  i.machine = t.machine();
  i.world_size = t.world_size();
  i.ranks = t.ranks_size();
  i.events = event_total(t);
  i.has_interval = t.has_iteration_time_low_s() && t.has_iteration_time_high_s();
  i.interval_low_s = t.iteration_time_low_s();
  i.interval_high_s = t.iteration_time_high_s();
  i.has_evidence = t.has_interval_evidence();
  if (i.has_evidence) i.evidence = t.interval_evidence();
  i.has_state_probe = t.has_state_probe();
  if (i.has_state_probe) i.state_probe = t.state_probe();
  return i;
}

LabelComparison finish(const Accumulator& acc, int ranks_compared) {
  LabelComparison l;
  l.label = acc.label;
  l.kind = acc.kind;
  l.count = acc.count;
  l.total = acc.total;
  l.median_error = acc.errors.median();
  l.worst_error = acc.errors.worst();
  l.contribution_s = ranks_compared > 0 ? (acc.total.a_s - acc.total.b_s) / ranks_compared : 0.0;
  return l;
}

void sort_by_contribution(std::vector<LabelComparison>& v) {
  std::sort(v.begin(), v.end(), [](const LabelComparison& x, const LabelComparison& y) {
    const double ax = std::fabs(x.contribution_s), ay = std::fabs(y.contribution_s);
    if (ax != ay) return ax > ay;
    return x.label < y.label;
  });
}

// A time in A and in B and the error between them, as three keys of the current object.
void json_pair(JsonWriter& j, const char* a_key, const char* b_key, const char* error_key, const TimePair& p) {
  j.key(a_key).number(p.a_s);
  j.key(b_key).number(p.b_s);
  j.key(error_key).number(p.error());
}

void json_info(JsonWriter& j, const TraceInfo& i) {
  j.begin_object();
  j.key("name").string(i.name);
  j.key("scenario").string(i.scenario);
  j.key("scenario_digest").string(i.digest);
  j.key("backend").string(i.backend);
  j.key("machine").string(i.machine);
  j.key("world_size").integer(i.world_size);
  j.key("ranks").integer(i.ranks);
  j.key("events").integer(i.events);
  j.end_object();
}

void json_streams(JsonWriter& j, const std::vector<StreamTimes>& streams) {
  j.begin_array();
  for (const StreamTimes& s : streams) {
    j.begin_object();
    j.key("stream").string(to_string(static_cast<Stream>(s.stream)));
    json_pair(j, "busy_a_s", "busy_b_s", "error", s.busy);
    j.key("events_a").integer(s.events_a);
    j.key("events_b").integer(s.events_b);
    j.end_object();
  }
  j.end_array();
}

void json_labels(JsonWriter& j, const std::vector<LabelComparison>& labels, bool with_label) {
  j.begin_array();
  for (const LabelComparison& l : labels) {
    j.begin_object();
    if (with_label) j.key("label").string(l.label);
    j.key("kind").string(l.kind);
    j.key("count").integer(l.count);
    json_pair(j, "total_a_s", "total_b_s", "total_error", l.total);
    j.key("median_error").number(l.median_error);
    j.key("worst_error").number(l.worst_error);
    j.key("contribution_s").number(l.contribution_s);
    j.end_object();
  }
  j.end_array();
}

// Error when a trace has nothing to compare, or when A is measured and B predicted: the roles are
// swapped (two traces of one kind, strategy against strategy, are fine).
void check_roles(const proto::Trace& a, const proto::Trace& b, const CompareOptions& options) {
  for (const auto& [t, name] : {std::pair{&a, &options.name_a}, std::pair{&b, &options.name_b}}) {
    if (t->ranks_size() == 0)
      throw Error("tandem compare: trace " + *name + " holds no rank records: nothing to compare (a run that " +
                  "recorded no rank, or a trace cut to its header)");
    if (event_total(*t) == 0)
      throw Error("tandem compare: trace " + *name + " holds " + std::to_string(t->ranks_size()) +
                  " rank records but no event: nothing to compare");
  }
  if (trace_kind(a) == TraceKind::kMeasured && trace_kind(b) == TraceKind::kPredicted)
    throw Error("tandem compare: A (" + options.name_a + ") is " + describe_kind(a) + " and B (" + options.name_b +
                ") is " + describe_kind(b) + ": the roles are swapped. A is the prediction and B the reference " +
                "(error = (A - B) / B): call `tandem compare " + options.name_b + " " + options.name_a + "`");
}

}  // namespace

double relative_error(double a_s, double b_s) {
  if (b_s == 0) return a_s == 0 ? 0.0 : kNaN;
  return (a_s - b_s) / b_s;
}

std::string format_error(double error) {
  if (!std::isfinite(error)) return "n/a";
  char buf[32];
  const double pct = error * 100;
  const double mag = std::fabs(pct);
  if (mag < 0.005) return "0.00%";  // rounding noise of equal times, not a sign
  const int decimals = mag >= 100 ? 0 : mag >= 10 ? 1 : 2;
  std::snprintf(buf, sizeof buf, "%+.*f%%", decimals, pct);
  return buf;
}

std::string format_seconds(double s) {
  if (!std::isfinite(s)) return "n/a";
  struct Unit {
    double scale;
    const char* name;
  };
  static const Unit kUnits[] = {{1, "s"}, {1e-3, "ms"}, {1e-6, "us"}, {1e-9, "ns"}};
  const double mag = std::fabs(s);
  if (mag < 5e-12) return "0 s";  // below what the ns unit shows: rounding noise
  for (const Unit& u : kUnits) {
    if (mag >= u.scale || u.scale == 1e-9) {
      const double v = s / u.scale;
      const double av = std::fabs(v);
      char buf[32];
      std::snprintf(buf, sizeof buf, "%.*f %s", av >= 100 ? 0 : av >= 10 ? 1 : 2, v, u.name);
      return buf;
    }
  }
  return "?";
}

Comparison compare_traces(const proto::Trace& a, const proto::Trace& b, const CompareOptions& options) {
  check_trace(a, "trace " + options.name_a);
  check_trace(b, "trace " + options.name_b);
  check_roles(a, b, options);
  Comparison c;
  c.a = info(a, options.name_a);
  c.b = info(b, options.name_b);
  c.same_scenario = a.scenario_digest() == b.scenario_digest();
  c.spread_a = step_spread_of(a);
  c.spread_b = step_spread_of(b);
  if (!c.same_scenario && !options.allow_different_scenarios)
    throw Error("tandem compare: " + options.name_a + " and " + options.name_b +
                " ran different scenarios (scenario digest " + a.scenario_digest() + " of '" +
                a.scenario_name() + "' against " + b.scenario_digest() + " of '" + b.scenario_name() +
                "'); pass --allow-different-scenarios to compare them anyway");

  // Labels: one accumulator per label text (A's label table first), one per kind.
  std::vector<Accumulator> labels;
  std::unordered_map<std::string, int> label_index;
  std::vector<Accumulator> kinds;
  std::unordered_map<std::string, int> kind_index;
  std::vector<int> label_kind_of;  // accumulator index -> kind accumulator index
  auto label_acc = [&](const std::string& text) {
    auto [it, added] = label_index.try_emplace(text, int(labels.size()));
    if (added) {
      Accumulator acc;
      acc.label = text;
      acc.kind = std::string(label_kind(text));
      auto [kt, kadded] = kind_index.try_emplace(acc.kind, int(kinds.size()));
      if (kadded) {
        Accumulator k;
        k.label = acc.kind;
        k.kind = acc.kind;
        kinds.push_back(std::move(k));
      }
      label_kind_of.push_back(kt->second);
      labels.push_back(std::move(acc));
    }
    return it->second;
  };
  std::vector<int> a_label_acc(a.labels_size()), b_label_acc(b.labels_size());
  for (int i = 0; i < a.labels_size(); ++i) a_label_acc[i] = label_acc(a.labels(i));
  for (int i = 0; i < b.labels_size(); ++i) b_label_acc[i] = label_acc(b.labels(i));

  StreamTimes streams[kStreamCount];
  for (int s = 0; s < kStreamCount; ++s) streams[s].stream = s;
  double best_b_iteration = -1, best_a_iteration = -1;
  int slowest_b = -1, slowest_a = -1;
  int64_t best_b_peak = -1, best_a_peak = -1;
  int peak_b = -1, peak_a = -1;
  bool b_has_memory = false;

  auto unmatched = [&](int rank, const proto::Trace& t, const proto::Events& e, int i, bool in_a) {
    (in_a ? c.only_a : c.only_b) += 1;
    if (c.unmatched.size() < kUnmatchedExamples)
      c.unmatched.push_back({rank, e.task_id(i), t.labels(int(e.label(i))), in_a});
  };

  int ia = 0, ib = 0;
  while (ia < a.ranks_size() || ib < b.ranks_size()) {
    const proto::Rank* ra = ia < a.ranks_size() ? &a.ranks(ia) : nullptr;
    const proto::Rank* rb = ib < b.ranks_size() ? &b.ranks(ib) : nullptr;
    if (ra && rb && ra->rank() != rb->rank()) (ra->rank() < rb->rank() ? rb : ra) = nullptr;
    const int rank = ra ? ra->rank() : rb->rank();
    if (ra) ++ia;
    if (rb) ++ib;

    const RankView va = view(ra), vb = view(rb);
    RankComparison rc;
    rc.rank = rank;
    rc.in_a = ra != nullptr;
    rc.in_b = rb != nullptr;
    rc.iteration = {va.last_end_s - va.first_start_s, vb.last_end_s - vb.first_start_s};
    for (int s = 0; s < kStreamCount; ++s) {
      if (va.events[s] == 0 && vb.events[s] == 0) continue;
      StreamTimes st{s, {va.busy_s[s], vb.busy_s[s]}, va.events[s], vb.events[s]};
      rc.streams.push_back(st);
      streams[s].busy.a_s += st.busy.a_s;
      streams[s].busy.b_s += st.busy.b_s;
      streams[s].events_a += st.events_a;
      streams[s].events_b += st.events_b;
    }
    if (ra) {
      rc.peak_device_a_bytes = ra->peak_device_bytes();
      if (rc.iteration.a_s > best_a_iteration) best_a_iteration = rc.iteration.a_s, slowest_a = rank;
      if (rc.peak_device_a_bytes > best_a_peak) best_a_peak = rc.peak_device_a_bytes, peak_a = rank;
      c.iteration.a_s = std::max(c.iteration.a_s, rc.iteration.a_s);
    }
    if (rb) {
      rc.peak_device_b_bytes = rb->peak_device_bytes();
      b_has_memory = b_has_memory || rb->memory().time_s_size() > 0;
      if (rc.iteration.b_s > best_b_iteration) best_b_iteration = rc.iteration.b_s, slowest_b = rank;
      if (rc.peak_device_b_bytes > best_b_peak) best_b_peak = rc.peak_device_b_bytes, peak_b = rank;
      c.iteration.b_s = std::max(c.iteration.b_s, rc.iteration.b_s);
    }
    c.ranks.push_back(std::move(rc));

    // Merge-join the events of this rank on task id (both sorted, strictly increasing).
    static const proto::Events kNoEvents;
    const proto::Events& ea = ra ? ra->events() : kNoEvents;
    const proto::Events& eb = rb ? rb->events() : kNoEvents;
    if (ra && rb) ++c.ranks_compared;
    int i = 0, k = 0;
    while (i < ea.task_id_size() || k < eb.task_id_size()) {
      if (k >= eb.task_id_size() || (i < ea.task_id_size() && ea.task_id(i) < eb.task_id(k))) {
        unmatched(rank, a, ea, i++, true);
        continue;
      }
      if (i >= ea.task_id_size() || eb.task_id(k) < ea.task_id(i)) {
        unmatched(rank, b, eb, k++, false);
        continue;
      }
      const int la = a_label_acc[ea.label(i)], lb = b_label_acc[eb.label(k)];
      if (la != lb) ++c.label_mismatches;
      const double da = ea.end_s(i) - ea.start_s(i), db = eb.end_s(k) - eb.start_s(k);
      Accumulator& acc = labels[la];
      Accumulator& kind = kinds[label_kind_of[la]];
      for (Accumulator* x : {&acc, &kind}) {
        ++x->count;
        x->total.a_s += da;
        x->total.b_s += db;
        if (db > 0) x->errors.add((da - db) / db);
      }
      ++c.matched;
      ++i;
      ++k;
    }
  }

  c.slowest_rank = slowest_b >= 0 ? slowest_b : slowest_a;
  c.peak_memory_rank = b_has_memory ? peak_b : peak_a;
  for (const StreamTimes& s : streams)
    if (s.events_a > 0 || s.events_b > 0) c.streams.push_back(s);
  for (const Accumulator& acc : labels)
    if (acc.count > 0) c.labels.push_back(finish(acc, c.ranks_compared));
  for (const Accumulator& acc : kinds)
    if (acc.count > 0) c.kinds.push_back(finish(acc, c.ranks_compared));
  sort_by_contribution(c.labels);
  sort_by_contribution(c.kinds);
  return c;
}

StepSpreadInfo step_spread_of(const proto::Trace& t) {
  StepSpreadInfo out;
  size_t steps = 0;
  for (const proto::Rank& r : t.ranks()) steps = std::max(steps, size_t(r.step_times_s_size()));
  if (steps == 0) return out;
  std::vector<double> slowest(steps, 0);
  for (const proto::Rank& r : t.ranks())
    for (int i = 0; i < r.step_times_s_size(); ++i) slowest[size_t(i)] = std::max(slowest[size_t(i)], r.step_times_s(i));
  if (steps > 1) slowest.erase(slowest.begin());
  std::sort(slowest.begin(), slowest.end());
  auto q = [&](double p) {
    const double pos = p * double(slowest.size() - 1);
    const size_t lo = size_t(pos), hi = std::min(lo + 1, slowest.size() - 1);
    return slowest[lo] + (pos - double(lo)) * (slowest[hi] - slowest[lo]);
  };
  out.steps = int(slowest.size());
  out.min_s = slowest.front();
  out.max_s = slowest.back();
  out.q1_s = q(0.25);
  out.median_s = q(0.5);
  out.q3_s = q(0.75);
  return out;
}

namespace {

void json_spread(JsonWriter& j, const char* key, const StepSpreadInfo& s) {
  j.key(key);
  if (s.steps == 0) {
    j.null();
    return;
  }
  j.begin_object().key("steps").integer(s.steps).key("min_s").number(s.min_s).key("q1_s").number(s.q1_s);
  j.key("median_s").number(s.median_s).key("q3_s").number(s.q3_s).key("max_s").number(s.max_s);
  j.key("relative_iqr").number(s.relative_iqr()).end_object();
}

}  // namespace

std::string comparison_json(const Comparison& c) {
  JsonWriter j;
  j.begin_object();
  j.key("format").string("tandem-compare-1");
  j.key("a");
  json_info(j, c.a);
  j.key("b");
  json_info(j, c.b);
  j.key("same_scenario").boolean(c.same_scenario);
  j.key("headline").begin_object();
  json_pair(j, "iteration_a_s", "iteration_b_s", "error", c.iteration);
  j.key("a_interval_s");
  if (c.a.has_interval) j.begin_array().number(c.a.interval_low_s).number(c.a.interval_high_s).end_array();
  else j.null();
  j.key("b_in_a_interval");
  if (c.a.has_interval) j.boolean(b_in_a_interval(c));
  else j.null();
  // The interval's evidence beside the error and the measured spread (null: the default interval).
  j.key("a_interval_evidence");
  if (c.a.has_evidence) {
    const proto::IntervalEvidence& e = c.a.evidence;
    j.begin_object().key("name").string(e.name()).key("calibration_runs").integer(e.calibration_runs());
    j.key("calibration_spread_half_width");
    if (e.calibration_spread_half_width() >= 0) j.number(e.calibration_spread_half_width());
    else j.null();
    j.key("host_bench_residuals").begin_object().key("rows").integer(e.bench_rows()).key("q10").number(e.bench_q10());
    j.key("q50").number(e.bench_q50()).key("q90").number(e.bench_q90()).end_object();
    j.key("state_ratios");
    if (e.state_communication_ratio() > 0)
      j.begin_object().key("communication").number(e.state_communication_ratio()).key("memory").number(
          e.state_memory_ratio()).key("compute").number(e.state_compute_ratio()).key("calibrated_state").integer(
          e.calibrated_state()).key("calibrated_states").integer(e.calibrated_states()).key("matched").boolean(
          e.state_matched()).end_object();
    else j.null();
    j.end_object();
  } else {
    j.null();
  }
  j.key("b_state_probe");
  if (c.b.has_state_probe) {
    const proto::StateProbe& p = c.b.state_probe;
    j.begin_object().key("allreduce_256b_s").number(p.allreduce_256b_s()).key("allreduce_16kib_s").number(
        p.allreduce_16kib_s());
    j.key("zero_fill_1mib_s").number(p.zero_fill_1mib_s()).key("compute_s").number(p.compute_s()).end_object();
  } else {
    j.null();
  }
  j.key("ranks_compared").integer(c.ranks_compared);
  j.key("matched_events").integer(c.matched);
  j.key("only_in_a").integer(c.only_a);
  j.key("only_in_b").integer(c.only_b);
  j.key("label_mismatches").integer(c.label_mismatches);
  j.key("slowest_rank").integer(c.slowest_rank);
  j.key("peak_memory_rank").integer(c.peak_memory_rank);
  json_spread(j, "measured_spread_a", c.spread_a);
  json_spread(j, "measured_spread_b", c.spread_b);
  j.end_object();
  j.key("streams");
  json_streams(j, c.streams);
  j.key("ranks").begin_array();
  for (const RankComparison& r : c.ranks) {
    j.begin_object();
    j.key("rank").integer(r.rank);
    j.key("in_a").boolean(r.in_a);
    j.key("in_b").boolean(r.in_b);
    json_pair(j, "iteration_a_s", "iteration_b_s", "error", r.iteration);
    j.key("peak_device_a_bytes").integer(r.peak_device_a_bytes);
    j.key("peak_device_b_bytes").integer(r.peak_device_b_bytes);
    j.key("streams");
    json_streams(j, r.streams);
    j.end_object();
  }
  j.end_array();
  j.key("kinds");
  json_labels(j, c.kinds, false);
  j.key("labels");
  json_labels(j, c.labels, true);
  j.key("unmatched").begin_array();
  for (const UnmatchedTask& u : c.unmatched) {
    j.begin_object();
    j.key("rank").integer(u.rank);
    j.key("task_id").integer(u.task_id);
    j.key("label").string(u.label);
    j.key("in").string(u.in_a ? "a" : "b");
    j.end_object();
  }
  j.end_array();
  j.end_object();
  std::string out = j.take();
  out += '\n';
  return out;
}

std::string interval_evidence_text(const proto::IntervalEvidence& e) {
  char buf[512];
  std::string s = e.name() + ": ";
  if (e.calibration_spread_half_width() >= 0) {
    std::snprintf(buf, sizeof buf, "the %u calibration run%s spread +-%.1f %% and ", e.calibration_runs(),
                  e.calibration_runs() == 1 ? "'s" : "s'", 100 * e.calibration_spread_half_width());
    s += buf;
  }
  std::snprintf(buf, sizeof buf, "the host twin bench's residuals (%u rows, q10 %.3f, q50 %.3f, q90 %.3f), the wider per side",
                e.bench_rows(), e.bench_q10(), e.bench_q50(), e.bench_q90());
  s += buf;
  if (e.state_matched()) {
    std::snprintf(buf, sizeof buf, "; for the machine's state probed before the run: calibrated state %u of %u, its "
                  "runs' costs as measured", e.calibrated_state(), e.calibrated_states());
    s += buf;
  } else if (e.state_communication_ratio() > 0) {
    std::snprintf(buf, sizeof buf, "; scaled to the machine's state probed before the run: collectives x%.3f, "
                  "Allocs/Frees x%.3f, kernels x%.3f", e.state_communication_ratio(), e.state_memory_ratio(),
                  e.state_compute_ratio());
    s += buf;
    if (e.calibrated_states() > 0) {
      std::snprintf(buf, sizeof buf, " (in no calibrated state; the nearest, state %u of %u)", e.calibrated_state(),
                    e.calibrated_states());
      s += buf;
    }
  }
  return s;
}

int b_in_a_interval(const Comparison& c) {
  if (!c.a.has_interval) return -1;
  return c.a.interval_low_s <= c.iteration.b_s && c.iteration.b_s <= c.a.interval_high_s;
}

std::string comparison_text(const Comparison& c) {
  std::string s;
  s += "iteration time: " + c.a.name + " " + format_seconds(c.iteration.a_s) + ", " + c.b.name + " " +
       format_seconds(c.iteration.b_s) + ", error " + format_error(c.iteration.error()) + " (" + c.a.name +
       " vs " + c.b.name + ")\n";
  if (c.a.has_interval)
    s += "prediction interval of " + c.a.name + ": " + format_seconds(c.a.interval_low_s) + " .. " +
         format_seconds(c.a.interval_high_s) + ": " + c.b.name + (b_in_a_interval(c) ? " inside" : " outside") + "\n";
  if (c.a.has_evidence) s += "interval evidence: " + interval_evidence_text(c.a.evidence) + "\n";
  for (const auto* sp : {&c.spread_b, &c.spread_a}) {
    if (sp->steps == 0) continue;
    char line[256];
    std::snprintf(line, sizeof line, "measured spread of %s: %d steady-state steps, q1 %s, median %s, q3 %s (IQR %.1f%%)\n",
                  (sp == &c.spread_b ? c.b.name : c.a.name).c_str(), sp->steps, format_seconds(sp->q1_s).c_str(),
                  format_seconds(sp->median_s).c_str(), format_seconds(sp->q3_s).c_str(), 100 * sp->relative_iqr());
    s += line;
  }
  s += "events: " + std::to_string(c.matched) + " matched, " + std::to_string(c.only_a) + " only in " + c.a.name +
       ", " + std::to_string(c.only_b) + " only in " + c.b.name + "\n";
  if (!c.same_scenario) s += "warning: the traces ran different scenarios\n";
  const size_t n = std::min<size_t>(5, c.kinds.size());
  if (n > 0) s += "kinds contributing most (per-rank time, " + c.a.name + " - " + c.b.name + "):\n";
  for (size_t i = 0; i < n; ++i) {
    const LabelComparison& k = c.kinds[i];
    char line[256];
    std::snprintf(line, sizeof line, "  %-16s %12s  total %s  median %s\n", k.kind.c_str(),
                  format_seconds(k.contribution_s).c_str(), format_error(k.total.error()).c_str(),
                  format_error(k.median_error).c_str());
    s += line;
  }
  return s;
}

}  // namespace tandem
