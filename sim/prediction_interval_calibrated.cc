#include "sim/prediction_interval_calibrated.h"

#include <algorithm>
#include <cmath>
#include <sstream>

#include "shared/error.h"
#include "sim/tsv_fields.h"

namespace tandem::sim {

namespace {

// q10..q90 half-width of a normal distribution: per IQR (1.28155 / 1.34898) and per standard
// deviation (sim/prediction_interval_calibrated.h).
constexpr double kHalfWidthPerIqr = 1.2815516 / 1.3489795;
constexpr double kHalfWidthPerSigma = 1.2815516;

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

const char* interval_evidence_name(IntervalEvidence e) {
  switch (e) {
    case IntervalEvidence::kReferenceResiduals: return "reference-residuals";
    case IntervalEvidence::kHostBench: return "host-bench-residuals";
    case IntervalEvidence::kCalibrationSpreadAndHostBench: return "calibration-spread+host-bench-residuals";
  }
  return "?";
}

double calibration_spread_half_width(const std::vector<CalibrationRunSpread>& runs) {
  std::vector<double> iqrs, times;
  for (const CalibrationRunSpread& r : runs) {
    if (r.steps >= 2 && std::isfinite(r.relative_iqr) && r.relative_iqr >= 0) iqrs.push_back(r.relative_iqr);
    if (std::isfinite(r.iteration_s) && r.iteration_s > 0) times.push_back(r.iteration_s);
  }
  double s = 0;
  if (times.size() >= 2) {
    double mean = 0;
    for (double x : times) mean += x;
    mean /= double(times.size());
    double ss = 0;
    for (double x : times) ss += (x - mean) * (x - mean);
    s = std::sqrt(ss / double(times.size() - 1)) / median(times);
  }
  if (iqrs.empty() && times.size() < 2) return -1;
  const double step = iqrs.empty() ? 0 : kHalfWidthPerIqr * median(iqrs);
  const double run = kHalfWidthPerSigma * s;
  return std::sqrt(step * step + run * run);
}

HostBenchResiduals HostBenchResiduals::parse(const std::string& text, const std::string& origin) {
  HostBenchResiduals t;
  std::istringstream in(text);
  std::string line;
  bool header = true, data = false;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    const std::string at = origin + ":" + std::to_string(n);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) continue;
    if (line[0] == '#') {
      t.header.push_back(line);
      continue;
    }
    const std::vector<std::string> f = split_tabs(line);
    if (header) {
      if (f.size() != 4 || f[0] != "rows") throw Error(at + ": the header must be rows, q10, q50, q90 (tab-separated)");
      header = false;
      continue;
    }
    if (data) throw Error(at + ": a second data line (the table holds one: the bench's rows pooled)");
    if (f.size() != 4) throw Error(at + ": " + std::to_string(f.size()) + " fields, 4 expected (tab-separated)");
    const double rows = parse_positive_field(f[0], at, "rows");
    if (rows != std::floor(rows) || rows > 1e9) throw Error(at + ": field rows '" + f[0] + "' must be a whole number");
    t.rows = int(rows);
    const QuantileFields q = parse_quantile_fields(f, 1, at);
    t.q10 = q.q10, t.q50 = q.q50, t.q90 = q.q90;
    data = true;
  }
  if (!data) throw Error(origin + ": no data line (rows, q10, q50, q90)");
  return t;
}

const char* HostBenchResiduals::builtin_file(bool scaled) {
  return scaled ? "traces/calibration/host_twin_residuals_scaled.tsv" : "traces/calibration/host_twin_residuals.tsv";
}

const HostBenchResiduals& HostBenchResiduals::builtin(bool scaled) {
  static const HostBenchResiduals plain = parse_compiled_in(
      &HostBenchResiduals::parse, host_twin_residuals_tsv(), std::string(builtin_file(false)) + " (compiled in)");
  static const HostBenchResiduals state = parse_compiled_in(
      &HostBenchResiduals::parse, host_twin_residuals_scaled_tsv(), std::string(builtin_file(true)) + " (compiled in)");
  return scaled ? state : plain;
}

CalibratedInterval calibrated_interval(double t_s, const std::vector<CalibrationRunSpread>& runs,
                                       const HostBenchResiduals& bench) {
  CalibratedInterval out;
  out.spread_half_width = calibration_spread_half_width(runs);
  out.evidence = out.spread_half_width >= 0 ? IntervalEvidence::kCalibrationSpreadAndHostBench : IntervalEvidence::kHostBench;
  if (!(t_s > 0)) {
    out.interval = {t_s, t_s};
    return out;
  }
  const double h = std::max(0.0, out.spread_half_width);
  const double low = bench.q50 - std::max(bench.q50 - bench.q10, h);
  const double high = bench.q50 + std::max(bench.q90 - bench.q50, h);
  out.interval.low_s = std::max(0.0, std::min(t_s * low, t_s));
  out.interval.high_s = std::max(t_s * high, t_s);
  return out;
}

}  // namespace tandem::sim
