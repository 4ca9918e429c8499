// The result of a sweep: one row per point, in the grid's order whatever the number of workers,
// and what is derived from the rows alone: each point's strategy (its values of the keys other
// than cluster.gpus), its scaling efficiency, the best strategy per size, and the --json object.
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "sim/sweep/sweep_grid.h"

namespace tandem::sweep {

enum class PointStatus : uint8_t {
  kOk,       // simulated
  kInvalid,  // the loader, the schedule or the simulator rejected the input (tandem::Error, code 2)
  kOom,      // a device or host ran out of memory during the simulated iteration
  kError,    // anything else (an internal error, a simulation process that died)
};
const char* to_string(PointStatus s);

// What one point's simulation gives. Metrics are NaN (JSON null) unless status is kOk.
struct PointResult {
  static constexpr double kNone = std::numeric_limits<double>::quiet_NaN();
  PointStatus status = PointStatus::kError;
  std::string reason;  // why the point is not kOk: the loader's or simulator's message
  // The resolved scenario (empty and 0 when it did not load).
  std::string scenario_name;
  int gpus = 0, dp = 0, tp = 0, pp = 0, sp = 0;
  double iteration_time_s = kNone;
  // Its prediction interval (sim/prediction_interval.h).
  double iteration_time_low_s = kNone, iteration_time_high_s = kNone;
  double tokens_per_s = kNone;
  double model_tflops_per_gpu = kNone;
  double hardware_tflops_per_gpu = kNone;
  double mfu = kNone;
  int64_t peak_memory_bytes = -1;  // max over ranks; -1 when not simulated
  // `tandem sweep --approximate` (sim::SimOptions::approximate) kept an approximate run: what it
  // approximated (sim::approximation_note); empty: the point is exact.
  std::string approximate;
};

struct SweepPoint {
  std::vector<std::string> values;  // one per axis
  // The values of the keys other than cluster.gpus, each key named by its field unless two varied
  // keys share it: "tp=2 pp=4"; "scenario" when only the size varies.
  std::string strategy;
  int gpus = 0;                     // the size this point is compared at (0: unknown)
  PointResult result;
  // tokens/s per GPU relative to the same strategy's valid point with the fewest GPUs (1 there);
  // NaN when the point is not valid.
  double scaling_efficiency = PointResult::kNone;
};

struct SweepTable {
  std::string scenario_path, scenario_name;
  std::vector<std::string> sets;  // the --set overrides common to every point
  std::vector<VaryAxis> axes;
  std::vector<SweepPoint> points;
};

// Builds the table from the grid and the results (results[i] is point i), filling strategy,
// gpus and scaling efficiency.
SweepTable make_table(const std::string& scenario_path, const std::vector<std::string>& sets, const SweepGrid& grid,
                      std::vector<PointResult> results);

// Distinct strategies in order of first appearance.
std::vector<std::string> strategies(const SweepTable& t);

struct BestAtSize {
  int gpus = 0;
  int point = -1;  // the valid point of highest tokens/s at this size (the first such in table order); -1: none valid
};
// One entry per distinct size, in increasing order of GPUs.
std::vector<BestAtSize> best_per_size(const SweepTable& t);

// The --json object:
//  {"format":"tandem-sweep-1","scenario","scenario_name","sets":[...],
//   "vary":[{"key","values":[...]}],
//   "points":[{"index","values":{key:value...},"strategy","gpus","dp","tp","pp","sp","status","reason",
//              "iteration_time_s",
//              "iteration_time_interval_s":[low,high] (null when not simulated),"tokens_per_s","model_tflops_per_gpu","hardware_tflops_per_gpu","mfu",
//              "peak_memory_bytes","scaling_efficiency"}],
//   "best":[{"gpus","point","strategy","tokens_per_s"}]}
// Deterministic: a function of the table alone (no times, no worker count).
std::string sweep_json(const SweepTable& t);

}  // namespace tandem::sweep
