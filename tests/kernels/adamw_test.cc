// cpu::adamw_step against a float64 transcription of torch.optim.AdamW over several steps, and
// the hand-derived first step: with zero state, m_hat / sqrt(v_hat) = g / |g|, so every weight
// moves by lr against its gradient's sign (up to eps), after the decoupled decay.

#include "kernels/cpu/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <stdexcept>
#include <vector>

#include "tests/kernels/scalar_adamw.h"
#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr float kLr = 1e-2f, kBeta1 = 0.9f, kBeta2 = 0.95f, kEps = 1e-8f, kDecay = 0.1f;

TEST(CpuAdamW, FirstStepMovesEachWeightByLrAgainstItsGradientSign) {
  std::vector<float> param = {1.0f, -2.0f, 0.5f};
  const std::vector<float> grad = {0.3f, -0.01f, 2.0f};
  std::vector<float> m(3, 0.0f), v(3, 0.0f);
  cpu::adamw_step(param.data(), grad.data(), m.data(), v.data(), 3, kLr, kBeta1, kBeta2, kEps,
                  kDecay, 1);
  const std::vector<double> expected = {1.0 * (1 - 1e-3) - 1e-2, -2.0 * (1 - 1e-3) + 1e-2,
                                        0.5 * (1 - 1e-3) - 1e-2};
  EXPECT_TRUE(all_near(param, expected, 1e-6, 1e-6));
}

TEST(CpuAdamW, ThreeStepsMatchFloat64Reference) {
  const std::int64_t n = 11;
  auto param = random_floats(n, 101);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  std::vector<double> p_ref(param.begin(), param.end()), m_ref(n, 0.0), v_ref(n, 0.0);
  for (std::int64_t step = 1; step <= 3; ++step) {
    const auto grad = random_floats(n, 101 + static_cast<std::uint32_t>(step));
    cpu::adamw_step(param.data(), grad.data(), m.data(), v.data(), n, kLr, kBeta1, kBeta2, kEps,
                    kDecay, step);
    for (std::int64_t i = 0; i < n; ++i) {
      p_ref[i] *= 1.0 - static_cast<double>(kLr) * kDecay;
      m_ref[i] = kBeta1 * m_ref[i] + (1.0 - kBeta1) * grad[i];
      v_ref[i] = kBeta2 * v_ref[i] + (1.0 - kBeta2) * grad[i] * grad[i];
      const double m_hat = m_ref[i] / (1.0 - std::pow(static_cast<double>(kBeta1), step));
      const double v_hat = v_ref[i] / (1.0 - std::pow(static_cast<double>(kBeta2), step));
      p_ref[i] -= kLr * m_hat / (std::sqrt(v_hat) + kEps);
    }
  }
  EXPECT_TRUE(all_near(param, p_ref, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(m, m_ref, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(v, v_ref, kForwardRtol, kForwardAtol));
}

// Each element goes through the same IEEE-rounded operations in any lane of the vector loop, its
// scalar remainder, or any thread's range, so every thread count gives the scalar loop's bits. n
// is odd and splits into 1 to 5 threads (kAdamwMinPerThread each) with ragged ends.
TEST(CpuAdamW, VectorisedAndThreadedAreBitIdenticalToTheScalarLoop) {
  const std::int64_t n = 5 * cpu::kAdamwMinPerThread + 37;
  const auto p0 = random_floats(size_t(n), 7);
  for (int threads : {1, 2, 3, 5, 8}) {
    std::vector<float> p = p0, m(size_t(n), 0.0f), v(size_t(n), 0.0f);
    std::vector<float> pr = p0, mr(size_t(n), 0.0f), vr(size_t(n), 0.0f);
    for (std::int64_t step = 1; step <= 3; ++step) {
      const auto g = random_floats(size_t(n), 11 + std::uint32_t(step));
      cpu::adamw_step(p.data(), g.data(), m.data(), v.data(), n, kLr, kBeta1, kBeta2, kEps, kDecay, step, threads);
      scalar_adamw(pr.data(), g.data(), mr.data(), vr.data(), n, kLr, kBeta1, kBeta2, kEps, kDecay, step);
    }
    EXPECT_EQ(std::memcmp(p.data(), pr.data(), size_t(n) * 4), 0) << threads << " threads";
    EXPECT_EQ(std::memcmp(m.data(), mr.data(), size_t(n) * 4), 0) << threads << " threads";
    EXPECT_EQ(std::memcmp(v.data(), vr.data(), size_t(n) * 4), 0) << threads << " threads";
  }
}

TEST(CpuAdamW, RejectsStepZero) {
  float p = 0.0f, g = 0.0f, m = 0.0f, v = 0.0f;
  EXPECT_THROW(cpu::adamw_step(&p, &g, &m, &v, 1, kLr, kBeta1, kBeta2, kEps, kDecay, 0),
               std::invalid_argument);
}

}  // namespace
}  // namespace tandem::kernels
