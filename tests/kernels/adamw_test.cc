// cpu::adamw_step against a float64 transcription of torch.optim.AdamW over several steps, and
// the hand-derived first step: with zero state, m_hat / sqrt(v_hat) = g / |g|, so every weight
// moves by lr against its gradient's sign (up to eps), after the decoupled decay.

#include "kernels/cpu/adamw.h"

#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>

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

TEST(CpuAdamW, RejectsStepZero) {
  float p = 0.0f, g = 0.0f, m = 0.0f, v = 0.0f;
  EXPECT_THROW(cpu::adamw_step(&p, &g, &m, &v, 1, kLr, kBeta1, kBeta2, kEps, kDecay, 0),
               std::invalid_argument);
}

}  // namespace
}  // namespace tandem::kernels
