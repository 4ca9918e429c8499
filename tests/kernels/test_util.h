#pragma once
// Helpers of the kernel tests: seeded random inputs, float64 conversions, tolerance checks and
// central finite differences of a scalar loss written in float64.

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <random>
#include <string>
#include <vector>

namespace tandem::kernels::test {

inline std::vector<float> random_floats(std::size_t n, std::uint32_t seed, float lo = -1.0f,
                                        float hi = 1.0f) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> out(n);
  for (float& x : out) x = dist(gen);
  return out;
}

inline std::vector<double> to_double(const std::vector<float>& x) {
  return std::vector<double>(x.begin(), x.end());
}

// Every actual[i] within rtol * |expected[i]| + atol of expected[i]; names the first few misses.
inline ::testing::AssertionResult all_near(const std::vector<float>& actual,
                                           const std::vector<double>& expected, double rtol,
                                           double atol) {
  if (actual.size() != expected.size()) {
    return ::testing::AssertionFailure()
           << "size " << actual.size() << " != expected size " << expected.size();
  }
  int misses = 0;
  std::string report;
  for (std::size_t i = 0; i < actual.size(); ++i) {
    const double error = std::abs(static_cast<double>(actual[i]) - expected[i]);
    if (!(error <= rtol * std::abs(expected[i]) + atol)) {
      if (++misses <= 5) {
        report += "\n  [" + std::to_string(i) + "] actual " + std::to_string(actual[i]) +
                  " expected " + std::to_string(expected[i]);
      }
    }
  }
  if (misses == 0) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure()
         << misses << " of " << actual.size() << " elements off" << report;
}

inline ::testing::AssertionResult all_near(const std::vector<float>& actual,
                                           const std::vector<float>& expected, double rtol,
                                           double atol) {
  return all_near(actual, to_double(expected), rtol, atol);
}

// d loss / d x by central differences; loss is evaluated in float64.
inline std::vector<double> numeric_gradient(
    const std::function<double(const std::vector<double>&)>& loss, std::vector<double> x,
    double h = 1e-5) {
  std::vector<double> grad(x.size());
  for (std::size_t i = 0; i < x.size(); ++i) {
    const double saved = x[i];
    x[i] = saved + h;
    const double up = loss(x);
    x[i] = saved - h;
    const double down = loss(x);
    x[i] = saved;
    grad[i] = (up - down) / (2.0 * h);
  }
  return grad;
}

// sum_i w[i] * y[i]: the scalar whose gradient with respect to y is w.
inline double weighted_sum(const std::vector<double>& w, const std::vector<double>& y) {
  double sum = 0.0;
  for (std::size_t i = 0; i < y.size(); ++i) sum += w[i] * y[i];
  return sum;
}

// Tolerances: float kernels against float64 references, and against finite differences.
constexpr double kForwardRtol = 1e-5;
constexpr double kForwardAtol = 1e-6;
constexpr double kGradRtol = 1e-4;
constexpr double kGradAtol = 1e-5;

}  // namespace tandem::kernels::test
