// How long a kernel takes on this machine's CPU (the host driver, exec/), for the shapes a
// calibration profile does not hold: fit on the profile's own measured kernels, instead of the GPU
// roofline (tiles, tensor cores, HBM) that means nothing for a CPU (docs/exec.md, "The host's
// compute model").
//
// Per kernel kind, time = a + b * flops + c * bytes, with flops = Compute::matmul_flops() and bytes
// = Compute::bytes_moved(), so a GEMM's rate is a function of (m, n, k): the fixed cost a (call,
// packing setup) dominates small shapes, b is the inverse of the sustained GEMM rate, c the inverse
// of the memory bandwidth its operands stream at. The coefficients are the non-negative least
// squares fit over the kind's measured shapes, each weighted by its number of samples (so the fit
// is closest where the step's total time is made): every subset of {a, b, c} is solved by least
// squares and the best one with all coefficients >= 0 is kept. A kind measured at one shape scales
// that time by work (flops, else bytes). A kind the profile lacks takes the pooled fit of the
// kinds of its class: with flops (GEMM, attention) or without (vector kernels).
#pragma once

#include <array>
#include <map>
#include <string>
#include <vector>

#include "shared/schedule.h"

namespace tandem::sim {

struct MeasuredKernel {
  Compute compute;      // kernel, dtype and dims (what matmul_flops and bytes_moved need)
  double time_s = 0;    // its mean measured time
  double samples = 1;   // the weight of this shape in the fit
};

struct HostFit {
  double fixed_s = 0;          // a
  double s_per_flop = 0;       // b
  double s_per_byte = 0;       // c
  int shapes = 0;              // measured shapes it was fit on
  double time_s(const Compute& c) const;
};

// This CPU's GEMM time on a grid of (m, n, k) (traces/calibration/gemm_probe.h): a GEMM shape the
// profile lacks takes the time per flop interpolated in (log m, log n, log k) between the grid
// points around it (trilinear in the log of seconds per flop; an axis outside the grid is clamped
// to its edge, so the time scales with the flops there), times its flops.
struct GemmGridPoint {
  double m = 0, n = 0, k = 0, time_s = 0;
};
class GemmGrid {
 public:
  GemmGrid() = default;
  explicit GemmGrid(const std::vector<GemmGridPoint>& points);
  bool empty() const { return points_.empty(); }
  // Negative when empty.
  double time_s(double m, double n, double k) const;

 private:
  std::vector<double> axis_[3];                      // sorted distinct log2 sizes of m, n, k
  std::map<std::array<int, 3>, double> points_;      // axis indices -> log(seconds per flop)
};

class HostComputeModel {
 public:
  HostComputeModel() = default;
  explicit HostComputeModel(const std::vector<MeasuredKernel>& measured, GemmGrid gemm = {});
  bool empty() const { return kinds_.empty() && gemm_.empty(); }
  // The fitted time of `c`; negative when nothing was measured to go on.
  double time_s(const Compute& c) const;
  // The fit used for kernel `k` (its own, else its class's pooled one); nullptr if none.
  const HostFit* fit_for(Kernel k) const;
  // One line per kind: "gemm: 3.1 us + 1/(84.2 GFLOP/s) + 1/(12.0 GB/s) over 6 shapes".
  std::string describe() const;

 private:
  std::map<Kernel, HostFit> kinds_;
  HostFit with_flops_, without_flops_;
  GemmGrid gemm_;
};

// Host collectives a profile lacks: time = t_ref * (bytes / bytes_ref)^alpha, alpha in [0, 1], the
// weighted least-squares line through (ln bytes, ln time) of the measured shapes (alpha 0 with one
// shape). Not affine in bytes: on a loaded machine a collective's time is mostly its peers waiting
// to be scheduled, once per protocol round, so it grows far slower than its bytes (measured: 256 B
// 38 ms, 16 KiB 157 ms, alpha 0.34; an affine fit through them gave DP's 430 KB all-reduce 3.2 s).
struct SizeLaw {
  double ref_bytes = 0, ref_s = 0, alpha = 0;
  int shapes = 0;
  double time_s(double bytes) const;
};
// Over (bytes, time, weight) points with bytes > 0 and time > 0 (others are ignored).
SizeLaw fit_size_law(const std::vector<std::array<double, 3>>& points);

// The least-squares fit above over (flops, bytes, time, weight) points; exposed for the tests.
HostFit fit_host_kernels(const std::vector<std::array<double, 4>>& points);

}  // namespace tandem::sim
