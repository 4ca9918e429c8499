#include "sim/host_compute_model.h"

#include <algorithm>
#include <cmath>
#include <cstdio>

namespace tandem::sim {
namespace {

// Work in units that keep the normal equations well conditioned: Gflop, GB, us.
constexpr double kFlopUnit = 1e9, kByteUnit = 1e9, kTimeUnit = 1e-6;

// Solves the n x n system (n <= 3) by Gaussian elimination with partial pivoting; false if singular.
bool solve(std::array<std::array<double, 4>, 3> m, int n, std::array<double, 3>& x) {
  for (int c = 0; c < n; ++c) {
    int p = c;
    for (int r = c + 1; r < n; ++r)
      if (std::abs(m[r][c]) > std::abs(m[p][c])) p = r;
    if (std::abs(m[p][c]) < 1e-12) return false;
    std::swap(m[c], m[p]);
    for (int r = 0; r < n; ++r) {
      if (r == c) continue;
      const double f = m[r][c] / m[c][c];
      for (int k = c; k <= n; ++k) m[r][k] -= f * m[c][k];
    }
  }
  for (int c = 0; c < n; ++c) x[c] = m[c][n] / m[c][c];
  return true;
}

}  // namespace

double HostFit::time_s(const Compute& c) const {
  return fixed_s + s_per_flop * c.matmul_flops() + s_per_byte * c.bytes_moved();
}

HostFit fit_host_kernels(const std::vector<std::array<double, 4>>& points) {
  HostFit best;
  best.shapes = int(points.size());
  if (points.empty()) return best;
  double best_residual = INFINITY;
  // Features: 1, flops, bytes (scaled); every non-empty subset, least squares, all coefficients >= 0.
  for (int mask = 1; mask < 8; ++mask) {
    std::vector<int> cols;
    for (int j = 0; j < 3; ++j)
      if (mask & (1 << j)) cols.push_back(j);
    const int n = int(cols.size());
    std::array<std::array<double, 4>, 3> a{};
    for (const auto& p : points) {
      const std::array<double, 3> f{1.0, p[0] / kFlopUnit, p[1] / kByteUnit};
      const double t = p[2] / kTimeUnit, w = p[3];
      for (int r = 0; r < n; ++r) {
        for (int c = 0; c < n; ++c) a[r][c] += w * f[cols[r]] * f[cols[c]];
        a[r][n] += w * f[cols[r]] * t;
      }
    }
    std::array<double, 3> x{};
    if (!solve(a, n, x)) continue;
    bool ok = true;
    for (int r = 0; r < n; ++r) ok &= x[r] >= 0;
    if (!ok) continue;
    std::array<double, 3> coef{};
    for (int r = 0; r < n; ++r) coef[cols[r]] = x[r];
    double residual = 0;
    for (const auto& p : points) {
      const double e = coef[0] + coef[1] * p[0] / kFlopUnit + coef[2] * p[1] / kByteUnit - p[2] / kTimeUnit;
      residual += p[3] * e * e;
    }
    // Fewer coefficients win ties (a single shape is fit exactly by any one of them): the first
    // mask that reaches the residual within rounding is kept, in the order 1, flops, bytes, ...
    if (residual < best_residual * (1 - 1e-9) - 1e-18) {
      best_residual = residual;
      best.fixed_s = coef[0] * kTimeUnit;
      best.s_per_flop = coef[1] * kTimeUnit / kFlopUnit;
      best.s_per_byte = coef[2] * kTimeUnit / kByteUnit;
    }
  }
  return best;
}

namespace {

// One shape: its time scaled by work (flops when it has them, else bytes); more: the fit.
HostFit fit_or_scale(const std::vector<std::array<double, 4>>& pts) {
  if (pts.size() != 1) return fit_host_kernels(pts);
  HostFit f;
  f.shapes = 1;
  if (pts[0][0] > 0) f.s_per_flop = pts[0][2] / pts[0][0];
  else if (pts[0][1] > 0) f.s_per_byte = pts[0][2] / pts[0][1];
  else f.fixed_s = pts[0][2];
  return f;
}

}  // namespace

GemmGrid::GemmGrid(const std::vector<GemmGridPoint>& points) {
  for (const GemmGridPoint& p : points) {
    if (!(p.m >= 1 && p.n >= 1 && p.k >= 1 && p.time_s > 0)) continue;
    const double dims[3] = {std::log2(p.m), std::log2(p.n), std::log2(p.k)};
    for (int a = 0; a < 3; ++a) axis_[a].push_back(dims[a]);
  }
  for (auto& a : axis_) {
    std::sort(a.begin(), a.end());
    a.erase(std::unique(a.begin(), a.end()), a.end());
  }
  for (const GemmGridPoint& p : points) {
    if (!(p.m >= 1 && p.n >= 1 && p.k >= 1 && p.time_s > 0)) continue;
    const double dims[3] = {std::log2(p.m), std::log2(p.n), std::log2(p.k)};
    std::array<int, 3> at{};
    for (int a = 0; a < 3; ++a)
      at[a] = int(std::lower_bound(axis_[a].begin(), axis_[a].end(), dims[a]) - axis_[a].begin());
    points_[at] = std::log(p.time_s / (2.0 * p.m * p.n * p.k));
  }
}

double GemmGrid::time_s(double m, double n, double k) const {
  if (points_.empty()) return -1;
  const double q[3] = {std::log2(std::max(m, 1.0)), std::log2(std::max(n, 1.0)), std::log2(std::max(k, 1.0))};
  // Per axis: the two bracketing grid indices and the weight of the upper one.
  int lo[3], hi[3];
  double w[3];
  for (int a = 0; a < 3; ++a) {
    const std::vector<double>& ax = axis_[a];
    const double x = std::clamp(q[a], ax.front(), ax.back());
    const int up = int(std::lower_bound(ax.begin(), ax.end(), x) - ax.begin());
    hi[a] = up;
    lo[a] = up > 0 && ax[size_t(up)] > x ? up - 1 : up;
    w[a] = hi[a] == lo[a] ? 0.0 : (x - ax[size_t(lo[a])]) / (ax[size_t(hi[a])] - ax[size_t(lo[a])]);
  }
  // The corners present (shapes over the probe's flop bound are missing), weights renormalised.
  double sum = 0, weight = 0;
  for (int corner = 0; corner < 8; ++corner) {
    std::array<int, 3> at{};
    double cw = 1;
    for (int a = 0; a < 3; ++a) {
      const bool upper = (corner >> a) & 1;
      at[a] = upper ? hi[a] : lo[a];
      cw *= upper ? w[a] : 1 - w[a];
    }
    if (cw <= 0) continue;
    if (auto it = points_.find(at); it != points_.end()) sum += cw * it->second, weight += cw;
  }
  double log_spf;
  if (weight > 0) {
    log_spf = sum / weight;
  } else {  // no corner probed: the nearest probed shape (in log2 sizes)
    double best = INFINITY;
    log_spf = 0;
    for (const auto& [at, v] : points_) {
      double d = 0;
      for (int a = 0; a < 3; ++a) d += std::pow(axis_[a][size_t(at[a])] - q[a], 2);
      if (d < best) best = d, log_spf = v;
    }
  }
  return 2.0 * m * n * k * std::exp(log_spf);
}

HostComputeModel::HostComputeModel(const std::vector<MeasuredKernel>& measured, GemmGrid gemm) : gemm_(std::move(gemm)) {
  std::map<Kernel, std::vector<std::array<double, 4>>> by_kind;
  std::vector<std::array<double, 4>> flops_class, bytes_class;
  for (const MeasuredKernel& m : measured) {
    const std::array<double, 4> p{m.compute.matmul_flops(), m.compute.bytes_moved(), m.time_s, m.samples};
    by_kind[m.compute.kernel].push_back(p);
    (p[0] > 0 ? flops_class : bytes_class).push_back(p);
  }
  for (auto& [k, pts] : by_kind) kinds_[k] = fit_or_scale(pts);
  with_flops_ = fit_or_scale(flops_class);
  without_flops_ = fit_or_scale(bytes_class);
}

const HostFit* HostComputeModel::fit_for(Kernel k) const {
  if (auto it = kinds_.find(k); it != kinds_.end()) return &it->second;
  return nullptr;
}

double HostComputeModel::time_s(const Compute& c) const {
  // A GEMM shape the run lacks: the fit over the run's own GEMMs when it has some, else this
  // CPU's probed rate at that shape (GemmGrid). The probe times a GEMM alone (warm caches, no
  // transposes): measured, in-run GEMMs of the tiny GPT took 4-45 % longer than the probe's at
  // the same (m, n, k) (docs/exec.md), so the run's own GEMMs come first.
  if (c.kernel == Kernel::kGemm && !gemm_.empty() && !fit_for(Kernel::kGemm))
    return gemm_.time_s(double(c.dims[0]), double(c.dims[1]), double(c.dims[2]));
  if (const HostFit* f = fit_for(c.kernel)) return f->time_s(c);
  const HostFit& pooled = c.matmul_flops() > 0 ? with_flops_ : without_flops_;
  if (pooled.shapes == 0) return -1;
  return pooled.time_s(c);
}

double SizeLaw::time_s(double bytes) const {
  if (shapes == 0) return -1;
  return ref_s * std::pow(std::max(bytes, 1.0) / ref_bytes, alpha);
}

SizeLaw fit_size_law(const std::vector<std::array<double, 3>>& points) {
  SizeLaw law;
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const auto& p : points) {
    if (!(p[0] > 0 && p[1] > 0 && p[2] > 0)) continue;
    const double x = std::log(p[0]), y = std::log(p[1]), w = p[2];
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
    ++law.shapes;
  }
  if (law.shapes == 0) return law;
  const double mx = sx / sw, my = sy / sw, var = sxx / sw - mx * mx;
  law.alpha = var > 1e-12 ? std::clamp((sxy / sw - mx * my) / var, 0.0, 1.0) : 0.0;
  law.ref_bytes = std::exp(mx);
  law.ref_s = std::exp(my);
  return law;
}

std::string HostComputeModel::describe() const {
  std::string out;
  char line[200];
  for (const auto& [k, f] : kinds_) {
    std::snprintf(line, sizeof line, "%s: %.2f us + %.3g s/Gflop (%.1f GFLOP/s) + %.3g s/GB over %d shape%s\n",
                  to_string(k), f.fixed_s * 1e6, f.s_per_flop * 1e9, f.s_per_flop > 0 ? 1e-9 / f.s_per_flop : 0.0,
                  f.s_per_byte * 1e9, f.shapes, f.shapes == 1 ? "" : "s");
    out += line;
  }
  return out;
}

}  // namespace tandem::sim
