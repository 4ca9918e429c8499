// The figures of merit of a simulated iteration, from its per-rank statistics and the scenario:
//   tokens/s           = global_batch * seq_len / iteration time
//   model TFLOP/s/GPU  = matmul flops of forward and backward (no recomputation), summed over
//                        ranks, / world size / iteration time (Narayanan et al. SC21 convention)
//   hardware TFLOP/s   = the same with recomputation
//   MFU                = model TFLOP/s per GPU / the GPU's dense peak for the training dtype
//   interval           = prediction_interval (sim/prediction_interval.h) of the iteration time,
//                        from the slowest rank's busy time by component; with a host calibration
//                        profile on the host preset, calibrated_interval
//                        (sim/prediction_interval_calibrated.h) from the calibration's own evidence
#pragma once

#include "sim/simulation.h"

namespace tandem::sim {

// `calibration`: SimOptions::calibration (null: none).
void finalize_metrics(SimResult& result, const Scenario& scenario, const CalibrationTable* calibration = nullptr);

}  // namespace tandem::sim
