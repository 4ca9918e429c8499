// cpu::attention against a float64 reference, with Q, K and V read as column slices of one fused
// QKV buffer (padded rows) and the gradients written into a fused dQKV buffer the same way; the
// backward against finite differences of L = sum(w * out), with and without stored probabilities.

#include "kernels/cpu/attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <ostream>
#include <stdexcept>

#include "tests/kernels/test_util.h"

namespace tandem::kernels {
namespace {

using namespace test;

struct Shape {
  std::int64_t batch, seq, heads, kv_heads, head_dim;
  std::int64_t q_cols() const { return heads * head_dim; }
  std::int64_t kv_cols() const { return kv_heads * head_dim; }
  // Fused row: [q | k | v | 1 pad element].
  std::int64_t ld() const { return q_cols() + 2 * kv_cols() + 1; }
  std::int64_t k_off() const { return q_cols(); }
  std::int64_t v_off() const { return q_cols() + kv_cols(); }
  std::int64_t tokens() const { return batch * seq; }
};

void PrintTo(const Shape& s, std::ostream* os) {
  *os << "batch " << s.batch << " seq " << s.seq << " heads " << s.heads << " kv_heads "
      << s.kv_heads << " head_dim " << s.head_dim;
}

struct Reference {
  std::vector<double> out, lse, probs;
};

Reference reference(const Shape& s, const std::vector<double>& qkv) {
  Reference ref;
  ref.out.assign(s.tokens() * s.q_cols(), 0.0);
  ref.lse.assign(s.batch * s.heads * s.seq, 0.0);
  ref.probs.assign(s.batch * s.heads * s.seq * s.seq, 0.0);
  const double scale = 1.0 / std::sqrt(static_cast<double>(s.head_dim));
  const std::int64_t group = s.heads / s.kv_heads;
  for (std::int64_t b = 0; b < s.batch; ++b) {
    for (std::int64_t h = 0; h < s.heads; ++h) {
      const std::int64_t kvh = h / group;
      for (std::int64_t i = 0; i < s.seq; ++i) {
        std::vector<double> score(i + 1);
        double max = -std::numeric_limits<double>::infinity();
        for (std::int64_t j = 0; j <= i; ++j) {
          double dot = 0.0;
          for (std::int64_t d = 0; d < s.head_dim; ++d) {
            dot += qkv[(b * s.seq + i) * s.ld() + h * s.head_dim + d] *
                   qkv[(b * s.seq + j) * s.ld() + s.k_off() + kvh * s.head_dim + d];
          }
          score[j] = scale * dot;
          max = std::max(max, score[j]);
        }
        double sum = 0.0;
        for (double sc : score) sum += std::exp(sc - max);
        const std::int64_t row = (b * s.heads + h) * s.seq + i;
        ref.lse[row] = max + std::log(sum);
        for (std::int64_t j = 0; j <= i; ++j) {
          const double p = std::exp(score[j] - ref.lse[row]);
          ref.probs[row * s.seq + j] = p;
          for (std::int64_t d = 0; d < s.head_dim; ++d) {
            ref.out[(b * s.seq + i) * s.q_cols() + h * s.head_dim + d] +=
                p * qkv[(b * s.seq + j) * s.ld() + s.v_off() + kvh * s.head_dim + d];
          }
        }
      }
    }
  }
  return ref;
}

class CpuAttention : public ::testing::TestWithParam<Shape> {
 protected:
  void forward(const std::vector<float>& qkv, std::vector<float>& out, std::vector<float>& lse,
               float* probs) {
    const Shape& s = GetParam();
    out.assign(s.tokens() * s.q_cols(), 0.0f);
    lse.assign(s.batch * s.heads * s.seq, 0.0f);
    cpu::attention_forward(qkv.data(), s.ld(), qkv.data() + s.k_off(), s.ld(),
                           qkv.data() + s.v_off(), s.ld(), s.batch, s.seq, s.heads, s.kv_heads,
                           s.head_dim, out.data(), lse.data(), probs);
  }
};

TEST_P(CpuAttention, ForwardMatchesFloat64Reference) {
  const Shape& s = GetParam();
  const auto qkv = random_floats(s.tokens() * s.ld(), 31, -1.5f, 1.5f);
  std::vector<float> out, lse, probs(s.batch * s.heads * s.seq * s.seq, 7.0f);
  forward(qkv, out, lse, probs.data());
  const Reference ref = reference(s, to_double(qkv));
  EXPECT_TRUE(all_near(out, ref.out, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(lse, ref.lse, kForwardRtol, kForwardAtol));
  EXPECT_TRUE(all_near(probs, ref.probs, kForwardRtol, kForwardAtol));  // zeros above the diagonal

  std::vector<float> out_without_probs, lse_without_probs;
  forward(qkv, out_without_probs, lse_without_probs, nullptr);
  EXPECT_EQ(out_without_probs, out);
  EXPECT_EQ(lse_without_probs, lse);
}

TEST_P(CpuAttention, BackwardMatchesFiniteDifferencesWithAndWithoutProbs) {
  const Shape& s = GetParam();
  const auto qkv = random_floats(s.tokens() * s.ld(), 32, -1.5f, 1.5f);
  const auto w = to_double(random_floats(s.tokens() * s.q_cols(), 33));
  std::vector<float> out, lse, probs(s.batch * s.heads * s.seq * s.seq);
  forward(qkv, out, lse, probs.data());
  const std::vector<float> dout(w.begin(), w.end());

  auto num = numeric_gradient(
      [&](const std::vector<double>& v) { return weighted_sum(w, reference(s, v).out); },
      to_double(qkv));
  // The pad column of dQKV must stay untouched: it starts as a sentinel and must end as one.
  for (std::int64_t r = 0; r < s.tokens(); ++r) num[r * s.ld() + s.ld() - 1] = 5.0;
  for (const float* p :
       {static_cast<const float*>(probs.data()), static_cast<const float*>(nullptr)}) {
    std::vector<float> dqkv(qkv.size(), 5.0f);
    cpu::attention_backward(qkv.data(), s.ld(), qkv.data() + s.k_off(), s.ld(),
                            qkv.data() + s.v_off(), s.ld(), out.data(), dout.data(), lse.data(), p,
                            s.batch, s.seq, s.heads, s.kv_heads, s.head_dim, dqkv.data(), s.ld(),
                            dqkv.data() + s.k_off(), s.ld(), dqkv.data() + s.v_off(), s.ld());
    EXPECT_TRUE(all_near(dqkv, num, kGradRtol, kGradAtol)) << (p ? "with probs" : "recomputed");
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, CpuAttention,
                         ::testing::Values(Shape{2, 5, 4, 2, 3},   // grouped-query
                                           Shape{1, 6, 3, 3, 4},   // multi-head
                                           Shape{2, 4, 2, 1, 5}),  // multi-query
                         [](const auto& info) {
                           return "heads" + std::to_string(info.param.heads) + "kv" +
                                  std::to_string(info.param.kv_heads);
                         });

TEST(CpuAttentionShapes, RejectsHeadsNotAMultipleOfKvHeads) {
  std::vector<float> buf(64), lse(8);
  EXPECT_THROW(cpu::attention_forward(buf.data(), 4, buf.data(), 4, buf.data(), 4, 1, 2, 3, 2, 1,
                                      buf.data(), lse.data(), nullptr),
               std::invalid_argument);
}

}  // namespace
}  // namespace tandem::kernels
