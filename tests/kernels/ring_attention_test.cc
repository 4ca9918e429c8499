// cpu::ring_attention_* in float64 against whole-sequence causal attention (a naive reference
// written here: softmax of the masked scores, and its backward dS = P o (dP - rowsum(dP o P)),
// dQ = scale dS K, dK = scale dS^T Q, dV = P^T dO), on the zig-zag split of Megatron-Core's context
// parallelism: rank i of sp holds chunks i and 2*sp-1-i, the ring visits the block of rank
// (i - j) mod sp at step j. Agreement to 1e-12 means the modes, masks and log-sum-exp merges
// reproduce the whole attention exactly up to float64 rounding. The reference's backward is
// checked once against central finite differences of L = sum(dout o out).
#include "kernels/cpu/ring_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <random>
#include <stdexcept>
#include <vector>

namespace tandem::kernels {
namespace {

using V = std::vector<double>;

struct Case {
  int64_t batch, heads, kv_heads, hd, sp, chunk;
  int64_t seq() const { return 2 * sp * chunk; }
};

V random(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  V v(n);
  for (double& x : v) x = d(g);
  return v;
}

// Whole-sequence causal attention: out [b*S, H*hd], lse [b, H, S].
void reference_forward(const Case& c, const V& q, const V& k, const V& v, V* out, V* lse) {
  const int64_t S = c.seq(), H = c.heads, G = H / c.kv_heads, hd = c.hd;
  out->assign(size_t(c.batch * S * H * hd), 0.0);
  lse->assign(size_t(c.batch * H * S), 0.0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < S; ++i) {
        V s(size_t(i + 1));
        double m = -1e300, l = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double x = 0;
          for (int64_t d = 0; d < hd; ++d) x += q[(b * S + i) * H * hd + h * hd + d] * k[(b * S + j) * c.kv_heads * hd + (h / G) * hd + d];
          s[j] = x / std::sqrt(double(hd));
          m = std::max(m, s[j]);
        }
        for (int64_t j = 0; j <= i; ++j) l += std::exp(s[j] - m);
        (*lse)[(b * H + h) * S + i] = m + std::log(l);
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t d = 0; d < hd; ++d)
            (*out)[(b * S + i) * H * hd + h * hd + d] += std::exp(s[j] - m) / l * v[(b * S + j) * c.kv_heads * hd + (h / G) * hd + d];
      }
}

void reference_backward(const Case& c, const V& q, const V& k, const V& v, const V& dout, V* dq, V* dk, V* dv) {
  const int64_t S = c.seq(), H = c.heads, G = H / c.kv_heads, hd = c.hd, KV = c.kv_heads * hd;
  const double scale = 1.0 / std::sqrt(double(hd));
  dq->assign(q.size(), 0.0);
  dk->assign(k.size(), 0.0);
  dv->assign(v.size(), 0.0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < H; ++h) {
      const int64_t g = h / G;
      for (int64_t i = 0; i < S; ++i) {
        V p(size_t(i + 1)), dp(size_t(i + 1));
        double m = -1e300, l = 0, rowsum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double x = 0;
          for (int64_t d = 0; d < hd; ++d) x += q[(b * S + i) * H * hd + h * hd + d] * k[(b * S + j) * KV + g * hd + d];
          p[j] = x * scale;
          m = std::max(m, p[j]);
        }
        for (int64_t j = 0; j <= i; ++j) l += std::exp(p[j] - m);
        for (int64_t j = 0; j <= i; ++j) {
          p[j] = std::exp(p[j] - m) / l;
          double x = 0;
          for (int64_t d = 0; d < hd; ++d) x += dout[(b * S + i) * H * hd + h * hd + d] * v[(b * S + j) * KV + g * hd + d];
          dp[j] = x;
          rowsum += p[j] * dp[j];
        }
        for (int64_t j = 0; j <= i; ++j) {
          const double ds = p[j] * (dp[j] - rowsum) * scale;
          for (int64_t d = 0; d < hd; ++d) {
            (*dv)[(b * S + j) * KV + g * hd + d] += p[j] * dout[(b * S + i) * H * hd + h * hd + d];
            (*dq)[(b * S + i) * H * hd + h * hd + d] += ds * k[(b * S + j) * KV + g * hd + d];
            (*dk)[(b * S + j) * KV + g * hd + d] += ds * q[(b * S + i) * H * hd + h * hd + d];
          }
        }
      }
    }
}

// The rows of rank i (chunks i and 2*sp-1-i) of a [b, S, cols] tensor, as [b, 2c, cols].
V local_rows(const Case& c, const V& x, int64_t cols, int64_t i) {
  const int64_t S = c.seq(), ch = c.chunk;
  V out;
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t part : {i, 2 * c.sp - 1 - i})
      for (int64_t t = 0; t < ch; ++t)
        for (int64_t e = 0; e < cols; ++e) out.push_back(x[(b * S + part * ch + t) * cols + e]);
  return out;
}

int mode_of(int64_t i, int64_t j, int64_t sp) {
  const int64_t src = (i - j + sp) % sp;
  return j == 0 ? 0 : (src < i ? 1 : 2);
}

void expect_near(const V& got, const V& want, double tol, const char* what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t e = 0; e < got.size(); ++e) ASSERT_NEAR(got[e], want[e], tol) << what << " element " << e;
}

class RingAttention : public ::testing::TestWithParam<Case> {};

TEST_P(RingAttention, ForwardAndBackwardEqualWholeSequenceAttention) {
  const Case c = GetParam();
  const int64_t S = c.seq(), QC = c.heads * c.hd, KV = c.kv_heads * c.hd;
  const V q = random(size_t(c.batch * S * QC), 1), k = random(size_t(c.batch * S * KV), 2),
          v = random(size_t(c.batch * S * KV), 3), dout = random(size_t(c.batch * S * QC), 4);
  V out, lse, dq, dk, dv;
  reference_forward(c, q, k, v, &out, &lse);
  reference_backward(c, q, k, v, dout, &dq, &dk, &dv);

  std::vector<V> kl(size_t(c.sp)), vl(size_t(c.sp)), dkl(size_t(c.sp)), dvl(size_t(c.sp));
  for (int64_t i = 0; i < c.sp; ++i) {
    kl[i] = local_rows(c, k, KV, i), vl[i] = local_rows(c, v, KV, i);
    dkl[i].assign(kl[i].size(), 0.0), dvl[i].assign(vl[i].size(), 0.0);
  }
  cpu::RingBlock blk{c.batch, c.chunk, c.heads, c.kv_heads, c.hd, 0};
  for (int64_t i = 0; i < c.sp; ++i) {
    const V ql = local_rows(c, q, QC, i), dol = local_rows(c, dout, QC, i);
    V o(ql.size(), 0.0), l(size_t(c.batch * c.heads * 2 * c.chunk), 0.0);
    for (int64_t j = 0; j < c.sp; ++j) {
      const int64_t src = (i - j + c.sp) % c.sp;
      blk.mode = mode_of(i, j, c.sp);
      cpu::ring_attention_forward(ql.data(), QC, kl[src].data(), KV, vl[src].data(), KV, blk, j > 0, o.data(), l.data());
    }
    expect_near(o, local_rows(c, out, QC, i), 1e-12, "out");
    // lse [b, H, S] -> this rank's columns
    V lw;
    for (int64_t b = 0; b < c.batch; ++b)
      for (int64_t h = 0; h < c.heads; ++h)
        for (int64_t part : {i, 2 * c.sp - 1 - i})
          for (int64_t t = 0; t < c.chunk; ++t) lw.push_back(lse[(b * c.heads + h) * S + part * c.chunk + t]);
    expect_near(l, lw, 1e-12, "lse");
    V g(ql.size(), 0.0);
    for (int64_t j = 0; j < c.sp; ++j) {
      const int64_t src = (i - j + c.sp) % c.sp;
      blk.mode = mode_of(i, j, c.sp);
      cpu::ring_attention_backward(ql.data(), QC, kl[src].data(), KV, vl[src].data(), KV, o.data(), dol.data(),
                                   l.data(), blk, g.data(), QC, dkl[src].data(), KV, dvl[src].data(), KV);
    }
    expect_near(g, local_rows(c, dq, QC, i), 1e-12, "dq");
  }
  for (int64_t i = 0; i < c.sp; ++i) {
    expect_near(dkl[i], local_rows(c, dk, KV, i), 1e-12, "dk");
    expect_near(dvl[i], local_rows(c, dv, KV, i), 1e-12, "dv");
  }
}

INSTANTIATE_TEST_SUITE_P(Shapes, RingAttention,
                         ::testing::Values(Case{2, 4, 2, 8, 1, 3}, Case{2, 4, 2, 8, 2, 3}, Case{1, 2, 2, 4, 3, 2},
                                           Case{2, 4, 1, 8, 4, 3}),
                         [](const auto& info) { return "sp" + std::to_string(info.param.sp) + "_" + std::to_string(info.index); });

// The reference backward against central differences of L = sum(dout o out) (step 1e-6).
TEST(RingAttentionReference, BackwardMatchesFiniteDifferences) {
  const Case c{1, 2, 1, 4, 2, 2};
  const int64_t S = c.seq(), QC = c.heads * c.hd, KV = c.kv_heads * c.hd;
  V q = random(size_t(S * QC), 5), k = random(size_t(S * KV), 6), v = random(size_t(S * KV), 7);
  const V dout = random(size_t(S * QC), 8);
  V dq, dk, dv;
  reference_backward(c, q, k, v, dout, &dq, &dk, &dv);
  auto loss = [&] {
    V out, lse;
    reference_forward(c, q, k, v, &out, &lse);
    double s = 0;
    for (size_t e = 0; e < out.size(); ++e) s += out[e] * dout[e];
    return s;
  };
  const double h = 1e-6;
  for (auto [x, g] : {std::pair<V*, V*>{&q, &dq}, {&k, &dk}, {&v, &dv}})
    for (size_t e = 0; e < x->size(); e += 3) {
      const double keep = (*x)[e];
      (*x)[e] = keep + h;
      const double up = loss();
      (*x)[e] = keep - h;
      const double down = loss();
      (*x)[e] = keep;
      EXPECT_NEAR((*g)[e], (up - down) / (2 * h), 1e-7) << e;
    }
}

TEST(RingAttention, RejectsUngroupedHeadsAndUnknownModes) {
  std::vector<float> x(64, 0.f);
  cpu::RingBlock bad{1, 1, 3, 2, 4, 0};
  EXPECT_THROW(cpu::ring_attention_forward(x.data(), 4, x.data(), 4, x.data(), 4, bad, false, x.data(), x.data()),
               std::invalid_argument);
  cpu::RingBlock mode{1, 1, 2, 2, 4, 3};
  EXPECT_THROW(cpu::ring_attention_forward(x.data(), 4, x.data(), 4, x.data(), 4, mode, false, x.data(), x.data()),
               std::invalid_argument);
}

}  // namespace
}  // namespace tandem::kernels
