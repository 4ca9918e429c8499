// The prediction interval of a prediction made with a host calibration profile (`tandem calibrate`
// on traces of `tandem run`'s host driver; `tandem sim --calibration` on the host preset), from
// the calibration's own evidence. The default interval (sim/prediction_interval.h) comes from the
// residuals of tandem's GPU costs on published GPU rows (compute q50 1.20: "tandem is too fast on
// a GPU"), which say nothing of costs measured on this machine: a +0.7 % prediction of the demo
// got "20.8 .. 26.8 ms: measured outside" (docs/exec.md, session 11).
//
// Evidence, both as deviations of measured / predicted around their median (q50), for the same
// 80 % band (kIntervalCoverage: q10..q90):
//  (a) the calibration runs' spread (CalibrationProfile.runs, written by `tandem calibrate`):
//      - step to step: r = the median over the runs of each run's relative IQR (its steady-state
//        steps' interquartile range over their median). For a normal distribution N(mu, sigma) the
//        quartiles are mu -+ 0.67449 sigma, so IQR = 1.34898 sigma, and q10, q90 = mu -+ 1.28155
//        sigma: the q10..q90 half-width is 1.28155 / 1.34898 = 0.95 IQR. Step part: 0.95 r.
//      - run to run (two runs or more): s = the sample standard deviation of the runs' iteration
//        times (n - 1 in the denominator) over their median; the q10..q90 half-width of a normal
//        is 1.28155 s. The runs' medians drift apart by more than their steps spread on this VM
//        (docs/exec.md, session 9 and 11 quiet reruns).
//      The two are independent sources (a step's noise within a run, the machine's drift between
//      runs) and add in quadrature: h = sqrt((0.95 r)^2 + (1.28155 s)^2). Runs with fewer than two
//      steady-state steps carry no step spread and are left out of r.
//  (b) the host twin bench's residuals (traces/calibration/host_twin_residuals.tsv, compiled in;
//      written by tests/bench/fit_host_twin_residuals.py from the rows of
//      tests/bench/host_twin_error.py runs, named with their date and commit in its header): the
//      q10, q50, q90 of measured / predicted over every configuration of those runs, each
//      predicted from a profile its measured run was not part of. They hold the model's error on
//      configurations other than the calibration's and the machine's noise when they were
//      measured. A prediction scaled to the machine's state (`tandem sim --state-probe`) takes
//      the residuals of scaled predictions instead (traces/calibration/host_twin_residuals_scaled.tsv,
//      the bench's `state pred` column, fit the same way with --scaled): its error is not the plain
//      prediction's (docs/exec.md "Session 15").
// Combination: each of (a) and (b) alone estimates the whole q10..q90 deviation of a prediction,
// (b) under the bench's conditions, (a) from this calibration's noise only. The wider one is
// kept on each side, so a calibration run on a noisier machine than the bench's widens the
// interval, and a quiet one still carries the model's error the bench measured:
//    low  = t (q50 - max(q50 - q10, h))     high = t (q50 + max(q90 - q50, h))
// then, as the default interval, held to include t itself. Adding (a) and (b) in quadrature
// instead would count the noise twice (the bench's residuals already hold the noise of its runs).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "sim/prediction_interval.h"

namespace tandem::sim {

// What a prediction's interval was made from (SimResult::interval_evidence; `tandem sim --json`
// "prediction_interval": {"evidence": ...}, absent for the default).
enum class IntervalEvidence : uint8_t {
  kReferenceResiduals,           // sim/prediction_interval.h: the GPU reference residuals (default)
  kHostBench,                    // (b) alone: a host profile that records no run spread
  kCalibrationSpreadAndHostBench,  // (a) and (b)
};
// "reference-residuals", "host-bench-residuals", "calibration-spread+host-bench-residuals".
const char* interval_evidence_name(IntervalEvidence e);

// One calibration run as the profile records it (CalibrationProfile.runs).
struct CalibrationRunSpread {
  int steps = 0;             // steady-state steps
  double iteration_s = 0;    // their median
  double relative_iqr = 0;   // their interquartile range over the median
};

// (a): the q10..q90 half-width h, relative to the iteration time, of the runs' spread (above);
// a negative value when the runs carry no spread (no run with two steps or more, and fewer than
// two runs with an iteration time).
double calibration_spread_half_width(const std::vector<CalibrationRunSpread>& runs);

// (b): the host twin bench's residuals of measured / predicted.
struct HostBenchResiduals {
  int rows = 0;
  double q10 = 1, q50 = 1, q90 = 1;
  std::vector<std::string> header;  // the file's '#' lines: the bench runs, their date and commit
  // "rows<TAB>q10<TAB>q50<TAB>q90" after one header line starting "rows", '#' comments; exactly
  // one data line, rows >= 1, 0 < q10 <= q50 <= q90. Error (bad input) naming `origin`, the line
  // and the field otherwise.
  static HostBenchResiduals parse(const std::string& text, const std::string& origin);
  // traces/calibration/host_twin_residuals.tsv as compiled in (parsed once); with `scaled`, the
  // residuals of predictions scaled to the state probe, host_twin_residuals_scaled.tsv.
  static const HostBenchResiduals& builtin(bool scaled = false);
  // The compiled-in table's file, as the evidence names it.
  static const char* builtin_file(bool scaled);
};

struct CalibratedInterval {
  Interval interval;
  IntervalEvidence evidence = IntervalEvidence::kHostBench;
  double spread_half_width = -1;  // h of (a); negative when not used
};

// The interval of the iteration time `t_s` predicted from a host profile whose runs are `runs`
// (the rule above). t_s <= 0 gives [t, t].
CalibratedInterval calibrated_interval(double t_s, const std::vector<CalibrationRunSpread>& runs,
                                       const HostBenchResiduals& bench);

// The text of traces/calibration/host_twin_residuals.tsv and host_twin_residuals_scaled.tsv as
// compiled in.
const char* host_twin_residuals_tsv();
const char* host_twin_residuals_scaled_tsv();

}  // namespace tandem::sim
