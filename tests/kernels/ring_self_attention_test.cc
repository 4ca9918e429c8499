// cpu::ring_self_* (Colossal-AI's ring self-attention, arXiv 2105.13120) in float64 against a naive
// whole-sequence causal attention written here, on the contiguous split: rank i of sp holds chunk i
// of c tokens of each sequence, and at ring step j holds the K (then V) block of rank (i - j) mod sp
// (Colossal-AI's _calc_incoming_device_range: step j >= 1 brings the block of rank i - j). The
// full-sequence dK and dV of every rank are summed over the ranks (the all-reduce of RingQK and
// RingAV's backward) and each rank's rows compared. The reference backward is checked against
// central finite differences of L = sum(dout o out).
#include "kernels/cpu/ring_self_attention.h"

#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

namespace tandem::kernels {
namespace {

using V = std::vector<double>;

struct Case {
  int64_t batch, heads, hd, sp, chunk;
  int64_t seq() const { return sp * chunk; }
  int64_t cols() const { return heads * hd; }
};

V random(size_t n, unsigned seed) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(-1.0, 1.0);
  V v(n);
  for (double& x : v) x = d(g);
  return v;
}

// Whole-sequence causal attention, rows [b*S, D]; P kept for the backward.
void reference(const Case& c, const V& q, const V& k, const V& v, const V* dout, V* out, V* dq, V* dk, V* dv) {
  const int64_t S = c.seq(), D = c.cols(), hd = c.hd;
  const double scale = 1.0 / std::sqrt(double(hd));
  out->assign(q.size(), 0.0);
  if (dout) dq->assign(q.size(), 0.0), dk->assign(q.size(), 0.0), dv->assign(q.size(), 0.0);
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t h = 0; h < c.heads; ++h)
      for (int64_t i = 0; i < S; ++i) {
        auto row = [&](const V& x, int64_t t) { return &x[size_t((b * S + t) * D + h * hd)]; };
        V p(size_t(i + 1));
        double m = -1e300, l = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double x = 0;
          for (int64_t e = 0; e < hd; ++e) x += row(q, i)[e] * row(k, j)[e];
          m = std::max(m, p[j] = x * scale);
        }
        for (int64_t j = 0; j <= i; ++j) l += (p[j] = std::exp(p[j] - m));
        for (int64_t j = 0; j <= i; ++j) p[j] /= l;
        double* o = &(*out)[size_t((b * S + i) * D + h * hd)];
        for (int64_t j = 0; j <= i; ++j)
          for (int64_t e = 0; e < hd; ++e) o[e] += p[j] * row(v, j)[e];
        if (!dout) continue;
        V dp(size_t(i + 1));
        double sum = 0;
        for (int64_t j = 0; j <= i; ++j) {
          double x = 0;
          for (int64_t e = 0; e < hd; ++e) x += row(*dout, i)[e] * row(v, j)[e];
          sum += p[j] * (dp[j] = x);
        }
        for (int64_t j = 0; j <= i; ++j) {
          const double ds = scale * p[j] * (dp[j] - sum);
          for (int64_t e = 0; e < hd; ++e) {
            (*dq)[size_t((b * S + i) * D + h * hd + e)] += ds * row(k, j)[e];
            (*dk)[size_t((b * S + j) * D + h * hd + e)] += ds * row(q, i)[e];
            (*dv)[size_t((b * S + j) * D + h * hd + e)] += p[j] * row(*dout, i)[e];
          }
        }
      }
}

// Rows of chunk r of every sequence: [b*c, D] from [b*S, D].
V chunk_of(const Case& c, const V& x, int64_t r) {
  const int64_t D = c.cols();
  V y(size_t(c.batch * c.chunk * D));
  for (int64_t b = 0; b < c.batch; ++b)
    for (int64_t t = 0; t < c.chunk; ++t)
      for (int64_t e = 0; e < D; ++e) y[size_t((b * c.chunk + t) * D + e)] = x[size_t((b * c.seq() + r * c.chunk + t) * D + e)];
  return y;
}

void check(const Case& c) {
  SCOPED_TRACE("batch " + std::to_string(c.batch) + " heads " + std::to_string(c.heads) + " sp " + std::to_string(c.sp));
  const int64_t S = c.seq(), D = c.cols(), n = c.batch * S * D;
  const V q = random(size_t(n), 1), k = random(size_t(n), 2), v = random(size_t(n), 3), dout = random(size_t(n), 4);
  V out, dq, dk, dv;
  reference(c, q, k, v, &dout, &out, &dq, &dk, &dv);
  V dk_sum(static_cast<size_t>(n), 0.0), dv_sum(static_cast<size_t>(n), 0.0);
  const int64_t scores = c.batch * c.heads * c.chunk * S;
  for (int64_t i = 0; i < c.sp; ++i) {
    cpu::RingSelfShape s{c.batch, c.chunk, c.heads, c.hd, c.sp, 0};
    const V qi = chunk_of(c, q, i), doi = chunk_of(c, dout, i);
    V sc(static_cast<size_t>(scores), 7.0), probs(static_cast<size_t>(scores)), ctx(qi.size(), 9.0);
    for (int64_t j = 0; j < c.sp; ++j) {  // the K pass, then the V pass
      s.block = (i - j + c.sp) % c.sp;
      const V kb = chunk_of(c, k, s.block);
      cpu::ring_self_scores(qi.data(), D, kb.data(), D, s, sc.data());
    }
    s.block = i;
    cpu::ring_self_softmax(sc.data(), s, probs.data());
    for (int64_t j = 0; j < c.sp; ++j) {
      s.block = (i - j + c.sp) % c.sp;
      const V vb = chunk_of(c, v, s.block);
      cpu::ring_self_context(probs.data(), vb.data(), D, s, j > 0, ctx.data());
    }
    const V want = chunk_of(c, out, i);
    for (size_t e = 0; e < want.size(); ++e) ASSERT_NEAR(ctx[e], want[e], 1e-12) << "rank " << i << " ctx " << e;

    V dv_full(static_cast<size_t>(n)), dk_full(static_cast<size_t>(n)), dprobs(static_cast<size_t>(scores), 5.0), dscores(static_cast<size_t>(scores)), dqi(qi.size(), 3.0);
    cpu::ring_self_grad_v(probs.data(), doi.data(), s, dv_full.data());
    for (int64_t j = 0; j < c.sp; ++j) {
      s.block = (i - j + c.sp) % c.sp;
      const V vb = chunk_of(c, v, s.block);
      cpu::ring_self_grad_probs(doi.data(), vb.data(), D, s, dprobs.data());
    }
    cpu::ring_self_softmax_backward(probs.data(), dprobs.data(), s, dscores.data());
    cpu::ring_self_grad_k(dscores.data(), qi.data(), D, s, dk_full.data());
    for (int64_t j = 0; j < c.sp; ++j) {
      s.block = (i - j + c.sp) % c.sp;
      const V kb = chunk_of(c, k, s.block);
      cpu::ring_self_grad_q(dscores.data(), kb.data(), D, s, j > 0, dqi.data(), D);
    }
    const V want_dq = chunk_of(c, dq, i);
    for (size_t e = 0; e < want_dq.size(); ++e) ASSERT_NEAR(dqi[e], want_dq[e], 1e-12) << "rank " << i << " dq " << e;
    for (int64_t e = 0; e < n; ++e) dk_sum[size_t(e)] += dk_full[size_t(e)], dv_sum[size_t(e)] += dv_full[size_t(e)];
  }
  for (int64_t e = 0; e < n; ++e) {
    ASSERT_NEAR(dk_sum[size_t(e)], dk[size_t(e)], 1e-12) << "dk " << e;
    ASSERT_NEAR(dv_sum[size_t(e)], dv[size_t(e)], 1e-12) << "dv " << e;
  }
}

TEST(RingSelfAttention, MatchesWholeSequenceAttentionInFloat64) {
  for (int64_t sp = 1; sp <= 4; ++sp) check({2, 3, 4, sp, 3});
  check({1, 1, 2, 3, 1});  // one token per rank
}

// The reference's backward against central differences of L = sum(dout o out) in q, k and v.
TEST(RingSelfAttention, ReferenceBackwardMatchesFiniteDifferences) {
  const Case c{1, 2, 3, 1, 4};
  const size_t n = size_t(c.batch * c.seq() * c.cols());
  V q = random(n, 11), k = random(n, 12), v = random(n, 13);
  const V dout = random(n, 14);
  V out, dq, dk, dv;
  reference(c, q, k, v, &dout, &out, &dq, &dk, &dv);
  auto loss = [&]() {
    V o, a, b2, d2;
    reference(c, q, k, v, nullptr, &o, &a, &b2, &d2);
    double l = 0;
    for (size_t e = 0; e < n; ++e) l += dout[e] * o[e];
    return l;
  };
  const double h = 1e-6;
  for (auto [x, g] : {std::pair<V*, V*>{&q, &dq}, {&k, &dk}, {&v, &dv}})
    for (size_t e = 0; e < n; ++e) {
      const double x0 = (*x)[e];
      (*x)[e] = x0 + h;
      const double up = loss();
      (*x)[e] = x0 - h;
      const double down = loss();
      (*x)[e] = x0;
      EXPECT_NEAR((up - down) / (2 * h), (*g)[e], 1e-7) << e;
    }
}

// pack: the K and V columns of the fused QKV rows; unpack: rank 1's rows (chunk 1) of the
// full-sequence dK, dV into dqkv's K and V columns, the Q columns untouched. By hand: batch 1,
// 2 tokens per rank, sp 2, one head of width 1 (D = 1).
TEST(RingSelfAttention, PackAndUnpackMoveTheKAndVColumns) {
  const cpu::RingSelfShape s{1, 2, 1, 1, 2, 1};
  const float qkv[] = {1, 2, 3, 4, 5, 6};  // rows (q, k, v): (1, 2, 3), (4, 5, 6)
  float k[2], v[2];
  cpu::ring_self_pack(qkv, s, k, v);
  EXPECT_EQ(k[0], 2);
  EXPECT_EQ(k[1], 5);
  EXPECT_EQ(v[0], 3);
  EXPECT_EQ(v[1], 6);
  const float dk_full[] = {10, 11, 12, 13}, dv_full[] = {20, 21, 22, 23};
  float dqkv[] = {-1, 0, 0, -2, 0, 0};
  cpu::ring_self_unpack(dk_full, dv_full, s, dqkv);
  const float want[] = {-1, 12, 22, -2, 13, 23};
  for (int e = 0; e < 6; ++e) EXPECT_EQ(dqkv[e], want[e]) << e;
}

}  // namespace
}  // namespace tandem::kernels
