#include "sim/sim_metrics.h"

#include <algorithm>

#include "sim/prediction_interval.h"
#include "sim/prediction_interval_calibrated.h"

namespace tandem::sim {

void finalize_metrics(SimResult& r, const Scenario& sc, const CalibrationTable* calibration) {
  const double t = r.iteration_time_s;
  double model = 0, hardware = 0;
  r.peak_memory_bytes = 0;
  r.slowest_rank = 0;
  for (size_t i = 0; i < r.ranks.size(); ++i) {
    const RankStats& s = r.ranks[i];
    model += s.model_flops;
    hardware += s.hardware_flops;
    r.peak_memory_bytes = std::max(r.peak_memory_bytes, s.peak_device_bytes);
    if (s.end_s > r.ranks[r.slowest_rank].end_s) r.slowest_rank = int(i);
  }
  const double world = std::max<size_t>(1, r.ranks.size());
  if (t > 0 && !r.oom) {
    r.tokens_per_s = double(sc.strategy.global_batch) * sc.model.seq_len / t;
    r.model_tflops_per_gpu = model / world / t / 1e12;
    r.hardware_tflops_per_gpu = hardware / world / t / 1e12;
    const double peak = sc.cluster.peak_tflops(sc.strategy.dtype);
    r.mfu = peak > 0 ? r.model_tflops_per_gpu / peak : 0;
  }
  // A host calibration profile on the host preset: every cost was measured on this machine, and
  // the interval comes from the calibration's own evidence (sim/prediction_interval_calibrated.h).
  // Otherwise the slowest rank's busy time by component is the path's mix for the GPU reference
  // residuals (docs/sim.md "Prediction intervals").
  Interval iv{t, t};
  r.interval_evidence = IntervalEvidence::kReferenceResiduals;
  r.interval_spread_half_width = -1;
  r.interval_calibration_runs = 0;
  if (calibration && calibration->host_profile() && sc.cluster.preset == "host") {
    const CalibratedInterval c = calibrated_interval(t, calibration->runs(), HostBenchResiduals::builtin(calibration->has_state()));
    if (!r.oom) iv = c.interval;
    r.interval_evidence = c.evidence;
    r.interval_spread_half_width = c.spread_half_width;
    r.interval_calibration_runs = int(calibration->runs().size());
    const StateChoice& choice = calibration->state_choice();
    if (choice.states > 0) {  // a --state-probe prediction; ratios 1 when its probe fell in a calibrated state
      r.state_communication_ratio = calibration->state_ratios().communication;
      r.state_memory_ratio = calibration->state_ratios().memory;
      r.state_compute_ratio = calibration->state_ratios().compute;
      r.calibrated_state = (choice.state < 0 ? 0 : choice.state) + 1;
      r.calibrated_states = choice.states;
      r.state_matched = choice.matched;
    }
  } else if (!r.oom && !r.ranks.empty()) {
    iv = prediction_interval(t, r.ranks[r.slowest_rank].component_s, ResidualTable::builtin());
  }
  r.iteration_time_low_s = iv.low_s;
  r.iteration_time_high_s = iv.high_s;
}

}  // namespace tandem::sim
