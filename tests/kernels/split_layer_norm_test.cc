// cpu::layer_norm_* over rows split into column parts (2D tensor parallelism), the all-reduce
// played by summing the parts' partial statistics here, against a float64 reference of the
// unsplit layer norm: y = (x - mean) rstd gamma + beta, and its backward
// dx = rstd (g - avg(g) - xhat avg(g xhat)), g = dy gamma, dgamma = sum_r dy xhat, dbeta = sum_r dy.

#include "kernels/cpu/split_layer_norm.h"

#include <gtest/gtest.h>

#include <cmath>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kRows = 3, kCols = 8, kParts = 2, kPart = kCols / kParts;
constexpr double kEps = 1e-5;

struct Reference {
  std::vector<double> y, mean, rstd, dx, dgamma, dbeta;
};

Reference reference(const std::vector<double>& x, const std::vector<double>& gamma, const std::vector<double>& beta,
                    const std::vector<double>& dy) {
  Reference ref;
  ref.y.resize(x.size());
  ref.dx.resize(x.size());
  ref.dgamma.assign(kCols, 0.0);
  ref.dbeta.assign(kCols, 0.0);
  for (std::int64_t r = 0; r < kRows; ++r) {
    double mu = 0.0, var = 0.0;
    for (std::int64_t c = 0; c < kCols; ++c) mu += x[r * kCols + c] / kCols;
    for (std::int64_t c = 0; c < kCols; ++c) var += std::pow(x[r * kCols + c] - mu, 2) / kCols;
    const double rs = 1.0 / std::sqrt(var + kEps);
    double avg_g = 0.0, avg_gx = 0.0;
    for (std::int64_t c = 0; c < kCols; ++c) {
      const double xhat = (x[r * kCols + c] - mu) * rs;
      ref.y[r * kCols + c] = xhat * gamma[c] + beta[c];
      avg_g += dy[r * kCols + c] * gamma[c] / kCols;
      avg_gx += dy[r * kCols + c] * gamma[c] * xhat / kCols;
    }
    for (std::int64_t c = 0; c < kCols; ++c) {
      const double xhat = (x[r * kCols + c] - mu) * rs;
      ref.dx[r * kCols + c] = rs * (dy[r * kCols + c] * gamma[c] - avg_g - xhat * avg_gx);
      ref.dgamma[c] += dy[r * kCols + c] * xhat;
      ref.dbeta[c] += dy[r * kCols + c];
    }
    ref.mean.push_back(mu);
    ref.rstd.push_back(rs);
  }
  return ref;
}

// Columns [p*kPart, (p+1)*kPart) of a [kRows, kCols] matrix.
std::vector<float> part_of(const std::vector<float>& m, std::int64_t p) {
  std::vector<float> out;
  for (std::int64_t r = 0; r < kRows; ++r)
    for (std::int64_t c = 0; c < kPart; ++c) out.push_back(m[r * kCols + p * kPart + c]);
  return out;
}

TEST(CpuSplitLayerNorm, TwoColumnPartsMatchTheUnsplitFloat64Reference) {
  const auto x = random_floats(kRows * kCols, 21, -2.0f, 2.0f);
  const auto gamma = random_floats(kCols, 22, 0.5f, 1.5f);
  const auto beta = random_floats(kCols, 23);
  const auto dy = random_floats(kRows * kCols, 24);
  const Reference ref = reference(to_double(x), to_double(gamma), to_double(beta), to_double(dy));

  std::vector<std::vector<float>> xs, dys, gs, bs;
  for (std::int64_t p = 0; p < kParts; ++p) {
    xs.push_back(part_of(x, p));
    dys.push_back(part_of(dy, p));
    gs.emplace_back(gamma.begin() + p * kPart, gamma.begin() + (p + 1) * kPart);
    bs.emplace_back(beta.begin() + p * kPart, beta.begin() + (p + 1) * kPart);
  }
  auto all_reduce = [&](const std::vector<std::vector<float>>& parts) {
    std::vector<float> sum(parts[0].size(), 0.0f);
    for (const auto& p : parts)
      for (size_t i = 0; i < p.size(); ++i) sum[i] += p[i];
    return sum;
  };
  std::vector<std::vector<float>> partial(kParts, std::vector<float>(kRows));
  for (std::int64_t p = 0; p < kParts; ++p)
    cpu::layer_norm_partial_mean(xs[p].data(), kRows, kPart, kCols, partial[p].data());
  const std::vector<float> mean = all_reduce(partial);
  for (std::int64_t p = 0; p < kParts; ++p)
    cpu::layer_norm_partial_var(xs[p].data(), mean.data(), kRows, kPart, kCols, partial[p].data());
  const std::vector<float> var = all_reduce(partial);
  std::vector<float> y(kRows * kCols), rstd(kRows);
  for (std::int64_t p = 0; p < kParts; ++p) {
    std::vector<float> yp(kRows * kPart);
    cpu::layer_norm_apply(xs[p].data(), gs[p].data(), bs[p].data(), mean.data(), var.data(), kRows, kPart, kEps,
                          yp.data(), rstd.data());
    for (std::int64_t r = 0; r < kRows; ++r)
      for (std::int64_t c = 0; c < kPart; ++c) y[r * kCols + p * kPart + c] = yp[r * kPart + c];
  }
  EXPECT_TRUE(all_near(mean, ref.mean, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(rstd, ref.rstd, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(y, ref.y, kForwardRtol, kForwardAtol));

  std::vector<std::vector<float>> sums(kParts, std::vector<float>(2 * kRows));
  for (std::int64_t p = 0; p < kParts; ++p)
    cpu::layer_norm_bwd_partial_sums(dys[p].data(), xs[p].data(), gs[p].data(), mean.data(), rstd.data(), kRows,
                                     kPart, kCols, sums[p].data());
  const std::vector<float> total = all_reduce(sums);
  std::vector<float> dx(kRows * kCols), dgamma(kCols, 1.0f), dbeta(kCols, 1.0f);  // accumulate onto 1
  for (std::int64_t p = 0; p < kParts; ++p) {
    std::vector<float> dxp(kRows * kPart);
    cpu::layer_norm_bwd_apply(dys[p].data(), xs[p].data(), gs[p].data(), mean.data(), rstd.data(), total.data(),
                              kRows, kPart, dxp.data(), dgamma.data() + p * kPart, dbeta.data() + p * kPart);
    for (std::int64_t r = 0; r < kRows; ++r)
      for (std::int64_t c = 0; c < kPart; ++c) dx[r * kCols + p * kPart + c] = dxp[r * kPart + c];
  }
  std::vector<double> dgamma_ref = ref.dgamma, dbeta_ref = ref.dbeta;
  for (double& v : dgamma_ref) v += 1.0;
  for (double& v : dbeta_ref) v += 1.0;
  EXPECT_TRUE(all_near(dx, ref.dx, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(dgamma, dgamma_ref, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(dbeta, dbeta_ref, kForwardRtol, kForwardAtol));
}

}  // namespace
}  // namespace tandem::kernels
