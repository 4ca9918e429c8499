// cpu::cross_entropy with one shard holding the whole vocabulary: the pieces compose
// log-softmax cross-entropy (float64 reference), and the backward matches finite differences of
// scale * sum_i loss_i.

#include "kernels/cpu/cross_entropy.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

constexpr std::int64_t kN = 3, kVocab = 7;
const std::vector<std::int32_t> kTargets = {2, 6, 0};

std::vector<double> reference_loss(const std::vector<double>& logits) {
  std::vector<double> loss(kN);
  for (std::int64_t i = 0; i < kN; ++i) {
    const double* row = logits.data() + i * kVocab;
    const double max = *std::max_element(row, row + kVocab);
    double sum = 0.0;
    for (std::int64_t c = 0; c < kVocab; ++c) sum += std::exp(row[c] - max);
    loss[i] = std::log(sum) + max - row[kTargets[i]];
  }
  return loss;
}

std::vector<float> loss_from_pieces(const std::vector<float>& logits) {
  std::vector<float> max(kN), sum_exp(kN), target(kN), loss(kN);
  cpu::cross_entropy_local_max(logits.data(), kN, kVocab, max.data());
  cpu::cross_entropy_local_sum_exp(logits.data(), kN, kVocab, max.data(), sum_exp.data());
  cpu::cross_entropy_target_logit(logits.data(), kN, kVocab, kTargets.data(), 0, target.data());
  cpu::cross_entropy_loss(max.data(), sum_exp.data(), target.data(), kN, loss.data());
  return loss;
}

TEST(CpuCrossEntropy, PiecesComposeCrossEntropy) {
  const auto logits = random_floats(kN * kVocab, 81, -5.0f, 5.0f);
  EXPECT_TRUE(all_near(loss_from_pieces(logits), reference_loss(to_double(logits)), kForwardRtol,
                       kForwardAtol));
}

TEST(CpuCrossEntropy, LargeLogitsDoNotOverflow) {
  auto logits = random_floats(kN * kVocab, 82, -5.0f, 5.0f);
  for (float& x : logits) x += 1000.0f;  // exp(1000) overflows; the max shift must prevent it
  EXPECT_TRUE(all_near(loss_from_pieces(logits), reference_loss(to_double(logits)), 1e-4, 1e-4));
}

TEST(CpuCrossEntropy, BackwardMatchesFiniteDifferences) {
  const auto logits = random_floats(kN * kVocab, 83, -5.0f, 5.0f);
  const float scale = 1.0f / kN;
  std::vector<float> max(kN), sum_exp(kN), dlogits(kN * kVocab, 99.0f);
  cpu::cross_entropy_local_max(logits.data(), kN, kVocab, max.data());
  cpu::cross_entropy_local_sum_exp(logits.data(), kN, kVocab, max.data(), sum_exp.data());
  cpu::cross_entropy_backward(logits.data(), kN, kVocab, kTargets.data(), 0, max.data(),
                              sum_exp.data(), scale, dlogits.data());
  const std::vector<double> w(kN, scale);
  const auto num = numeric_gradient(
      [&](const std::vector<double>& v) { return weighted_sum(w, reference_loss(v)); },
      to_double(logits));
  EXPECT_TRUE(all_near(dlogits, num, kGradRtol, kGradAtol));
}

}  // namespace
}  // namespace tandem::kernels
