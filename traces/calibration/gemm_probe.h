// A short probe of this CPU's GEMM rate as a function of (m, n, k), run by `tandem calibrate` on
// the machine the calibration run was measured on, so that `tandem sim --calibration` costs the
// GEMM shapes the run did not hold from this CPU (sim/host_compute_model.h), not from a GPU's
// datasheet. The host driver's own GEMM (kernels/cpu/gemm.h, OpenBLAS sgemm) is timed on every
// shape of a grid of powers of two, one thread per call as the host run pins it (exec/run_args.h).
#pragma once

#include <cstdint>
#include <vector>

#include "calibration.pb.h"

namespace tandem {

struct GemmProbeOptions {
  std::vector<int64_t> sizes = {8, 16, 32, 64, 128, 256, 512, 1024};  // each of m, n, k
  double max_flops = 1.2e9;       // shapes with 2mnk above are left out (tens of ms each)
  double min_time_per_shape_s = 0.004;  // calls repeated until this long (and at least min_reps)
  int min_reps = 5;
  int threads = 1;                // BLAS threads: those of a rank of the measured run
};

// Appends one GemmProbe per shape of the grid (median of the calls) to `profile`.
void probe_gemm(proto::CalibrationProfile& profile, const GemmProbeOptions& options = {});

}  // namespace tandem
