// The prediction interval of an iteration time, from the measured residuals of each cost
// component (sim/cost_component.h) on the reference data.
//
// Residuals: for each component, the ratio measured / tandem over its reference rows, summarised
// by its 10th, 50th and 90th percentiles (q10, q50, q90). They are fit by
// tests/bench/fit_prediction_intervals.py into sim/data/component_residuals.tsv, which is compiled
// in (component_residuals_tsv()); the file says what each row was fit on, when, and at which commit.
//
// Combination rule (docs/sim.md "Prediction intervals"), for a prediction t whose path is made of
// components with shares s_c (a rank's busy time by component / its total busy time: the slowest
// rank's, see finalize_metrics):
//  - the whole iteration's work of one component errs together (one ratio per component per
//    iteration), and so do the components of one `group` (fit on the same rows): within a group
//    deviations add linearly; groups are independent: their deviations add in quadrature;
//  - centre   m  = sum_c s_c q50_c
//    low      t * (m - sqrt(sum_g (sum_{c in g} s_c (q50_c - q10_c))^2))
//    high     t * (m + sqrt(sum_g (sum_{c in g} s_c (q90_c - q50_c))^2))
//    so that one component of share 1 gives exactly [q10 t, q90 t];
//  - the interval always holds t itself: low = min(low, t), high = max(high, t) (where the
//    residuals say tandem is biased, it reaches from t to the biased side).
// Intended coverage: kIntervalCoverage (the q10..q90 band of each component).
#pragma once

#include <string>
#include <vector>

#include "sim/cost_component.h"

namespace tandem::sim {

inline constexpr double kIntervalCoverage = 0.80;

struct ComponentResidual {
  std::string group;
  int rows = 0;
  double q10 = 1, q50 = 1, q90 = 1;  // of measured / tandem
  std::string source;
};

struct ResidualTable {
  std::array<ComponentResidual, kComponentCount> by_component;
  std::vector<std::string> header;  // the file's '#' lines: what it was fit on, date, commit

  // "component<TAB>group<TAB>rows<TAB>q10<TAB>q50<TAB>q90<TAB>source" lines after one header line
  // starting "component", '#' comments. Every component exactly once, 0 < q10 <= q50 <= q90.
  // Error (bad input) naming `origin`, the line and the field otherwise.
  static ResidualTable parse(const std::string& text, const std::string& origin);
  // The table compiled in from sim/data/component_residuals.tsv (parsed once).
  static const ResidualTable& builtin();
};

struct Interval {
  double low_s = 0, high_s = 0;
};

// The interval of an iteration time `t_s` whose path has busy time `busy_s` by component. With no
// busy time at all the interval is [t, t].
Interval prediction_interval(double t_s, const ComponentTimes& busy_s, const ResidualTable& table);

// The text of sim/data/component_residuals.tsv as compiled in.
const char* component_residuals_tsv();

}  // namespace tandem::sim
