// The steady-state steps of a run and their spread: `tandem run` measures every step, drops the
// first (warm-up: first touch of the buffers, the allocator, MPI's connections) and reports the
// median of the others as the iteration time, with the quartiles and extremes beside it so that a
// model error can be told from noise (docs/exec.md, "Measurement noise").
#pragma once

#include <vector>

namespace tandem::exec {

struct StepSpread {
  int first_step = 0;  // 0-based index of the first steady-state step
  int count = 0;       // steady-state steps
  double min_s = 0, q1_s = 0, median_s = 0, q3_s = 0, max_s = 0, mean_s = 0;
  int representative = 0;  // 0-based step whose time is nearest the median (the traced step)
  // (q3 - q1) / median: the relative interquartile range; 0 with fewer than 2 steps.
  double relative_iqr() const { return median_s > 0 ? (q3_s - q1_s) / median_s : 0; }
};

// Over step_s[1..] (all steps when there is only one). Quartiles by linear interpolation between
// order statistics (position p * (n - 1)), so the median of an even count is the mean of the two
// middle values.
StepSpread step_spread(const std::vector<double>& step_s);

}  // namespace tandem::exec
