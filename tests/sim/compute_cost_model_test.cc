// The compute cost model against hand-computed rooflines (sim/compute_cost_model.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "sim/compute_cost_model.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

TEST(ComputeCostModel, LargeGemmIsComputeBound) {
  ClusterSpec c = test_cluster(1);
  c.kernel_launch_us = 4;
  KernelEfficiency e;  // an unknown GPU name: the Ampere curve, 108 SMs
  const ComputeCostModel model(c, e, false);
  Compute g;
  g.kernel = Kernel::kGemm;
  g.dtype = DType::kBf16;
  g.dims = {8192, 8192, 8192, 0, 0, 0};
  // 64 x 64 = 4096 output tiles of 128x128 over 108 SMs: 38 waves, 4096 / (38 * 108) busy.
  const double quantisation = 4096.0 / (38 * 108);
  // k_half = 0.867 * 312e12 / 2000e9 (the cluster's balance); the Ampere maximum is the A100 MAMF,
  // 267.9 / 312 at k = 2048, over that shape's k-term with the A100's k_half, 132.7.
  const double k_half = 0.867 * 312e12 / 2000e9;
  const double max_eff = (267.9 / 312.0) * (2048.0 + 132.7) / 2048.0;
  const double eff = max_eff * quantisation * 8192 / (8192 + k_half);
  const double want = 2.0 * 8192 * 8192 * 8192 / (312e12 * eff) + 4e-6;
  EXPECT_NEAR(model.time_s(g), want, 1e-9 * want);
}

// A chunk of Transformer Engine's ring-exchange overlap (shared/tp_overlap.cc): dims[3] = the
// compute streams its chunks go round-robin on (min(3, tp)). The 32B Megatron-Core row's
// attention-projection dgrad chunk at tp 8: 512 x 896 x 7168 (n_local rows of 4096 / 8).
TEST(ComputeCostModel, ChunkGemmsOnSeveralStreamsShareTheWaves) {
  ClusterSpec c = test_cluster(1);
  c.gpu_name = "NVIDIA H100 80GB HBM3";
  c.peak_fp16_tflops = c.peak_bf16_tflops = 989.4;
  c.hbm_bandwidth_gbps = 3350;
  c.kernel_launch_us = 4;
  const ComputeCostModel model(c, KernelEfficiency{}, true);
  Compute g;
  g.kernel = Kernel::kGemm;
  g.dtype = DType::kBf16;
  g.dims = {512, 896, 7168, 0, 0, 0};
  // Hopper: max_efficiency 0.89, k_half = 0.867 * 989.4e12 / 3350e9 = 256.06; k-term
  // 7168 / (7168 + 256.06).
  const double kterm = 7168.0 / (7168.0 + 0.867 * 989.4e12 / 3350e9);
  const double flops = 2.0 * 512 * 896 * 7168;
  // Alone: 4 x 7 = 28 tiles of 128x128, one wave of 132 SMs: 28 / 132 busy.
  const double alone = flops / (989.4e12 * 0.89 * (28.0 / 132) * kterm) + 4e-6;
  EXPECT_NEAR(model.time_s(g), alone, 1e-9 * alone);
  // Three in flight: 84 tiles in one wave, 84 / 132 busy; three chunks take one such wave (and
  // one launch latency), each chunk a third of it.
  g.dims[3] = 3;
  const double shared = (3.0 * flops / (989.4e12 * 0.89 * (84.0 / 132) * kterm) + 4e-6) / 3.0;
  EXPECT_NEAR(model.time_s(g), shared, 1e-9 * shared);
  EXPECT_LT(model.time_s(g), 0.4 * alone);
  // A chunk that fills whole waves alone gains nothing but the shared launch latency: 4096 x
  // 4224 x 4096 is 32 x 33 = 1056 tiles = 8 waves of 132 exactly.
  g.dims = {4096, 4224, 4096, 0, 0, 0};
  const double whole = model.time_s(g);
  g.dims[3] = 3;
  EXPECT_NEAR(model.time_s(g), whole - 4e-6 + 4e-6 / 3, 1e-9 * whole);
}

TEST(ComputeCostModel, VectorKernelIsMemoryBound) {
  ClusterSpec c = test_cluster(1);
  KernelEfficiency e;
  const ComputeCostModel model(c, e, false);
  Compute n;
  n.kernel = Kernel::kLayerNorm;
  n.dtype = DType::kBf16;
  n.dims = {4096, 12288, 0, 0, 0, 0};
  // Reads x and writes y (2 bytes each) plus mean and rstd in fp32: 2*2*rows*cols + 8*rows, at the
  // measured 88 % of the HBM bandwidth (traces/reference/kernel_memory_bandwidth.tsv).
  const double bytes = 4.0 * 4096 * 12288 + 8.0 * 4096;
  EXPECT_NEAR(model.time_s(n), bytes / (2000e9 * 0.88), 1e-12);
}

// Without flash attention the forward is the kernels Megatron-LM runs, one after another: the
// batched score GEMM, the scale+mask+softmax pass, the dropout (with its mask), the batched
// context GEMM; the backward is four GEMMs and the dropout and softmax backward passes.
TEST(ComputeCostModel, AttentionWithoutFlashIsItsKernels) {
  ClusterSpec c = test_cluster(1);
  c.kernel_launch_us = 4;
  const ComputeCostModel model(c, KernelEfficiency{}, false);
  // b 1, s 1024, 8 heads of 128: 8 batched products.
  const double s = 1024, hd = 128, bh = 8, e = 2, square = bh * s * s;
  const double k_half = 0.867 * 312e12 / 2000e9, max_eff = (267.9 / 312.0) * (2048.0 + 132.7) / 2048.0;
  const double bw = 2000e9 * 0.88, launch = 4e-6;
  // Scores: 8 x (8 x 8 tiles) = 512 tiles, 5 waves of 108: 512 / 540 busy; k = 128. Memory:
  // q, k and the 1024 x 1024 scores of each product.
  const double score_eff = max_eff * (512.0 / 540.0) * hd / (hd + k_half);
  const double score = std::max(2 * bh * s * s * hd / (312e12 * score_eff), e * bh * (2 * s * hd + s * s) / bw) + launch;
  // Context (and dQ, dK, dV): 1024 x 128 outputs, k = 1024: 8 x 8 tiles = 64, one wave of 108.
  const double ctx_eff = max_eff * (64.0 / 108.0) * s / (s + k_half);
  const double ctx = std::max(2 * bh * s * hd * s / (312e12 * ctx_eff), e * bh * (s * s + 2 * s * hd) / bw) + launch;
  const double softmax = 2 * e * square / bw + launch, softmax_bwd = 3 * e * square / bw + launch;
  const double dropout = (2 * e + 1) * square / bw + launch;
  Compute a;
  a.kernel = Kernel::kAttention;
  a.dtype = DType::kBf16;
  a.flags = kCausal;
  a.dims = {1, 1024, 8, 8, 128, 0};
  a.outputs = {1, 2, 3};  // ctx, lse, probs: no dropout
  EXPECT_NEAR(model.time_s(a), score + softmax + ctx, 1e-12);
  a.outputs = {1, 2, 3, 4, 5};  // + mask, dropped
  EXPECT_NEAR(model.time_s(a), score + softmax + dropout + ctx, 1e-12);
  a.kernel = Kernel::kAttentionBwd;
  a.inputs = {1, 2, 3, 4, 5, 6, 7};  // qkv, ctx, dctx, lse, probs, mask, dropped
  EXPECT_NEAR(model.time_s(a), score + ctx + dropout + softmax_bwd + 2 * ctx, 1e-12);
}

// Flash attention on Hopper: cuDNN's measured rate (FlashAttention-3, Figure 5: 609 TFLOP/s at
// s 4096, head_dim 128, without mask; 518 with the causal mask on half the square).
TEST(ComputeCostModel, FlashAttentionOnHopperFollowsTheMeasuredCurve) {
  ClusterSpec c = test_cluster(1);
  c.gpu_name = "NVIDIA H100 80GB HBM3";
  c.peak_bf16_tflops = 989.4;
  c.hbm_bandwidth_gbps = 3350;
  c.kernel_launch_us = 4;
  const ComputeCostModel model(c, KernelEfficiency{}, true);
  Compute a;
  a.kernel = Kernel::kAttention;
  a.dtype = DType::kBf16;
  a.dims = {1, 4096, 16, 16, 128, 0};
  const double flops = 4.0 * 4096 * 4096 * 16 * 128;
  EXPECT_NEAR(model.time_s(a), flops / 609e12 + 4e-6, 1e-12);
  a.flags = kCausal;
  EXPECT_NEAR(model.time_s(a), flops / 2 / 518e12 + 4e-6, 1e-12);
}

TEST(ComputeCostModel, CalibrationOverridesTheModel) {
  ClusterSpec c = test_cluster(1);
  CalibrationTable t;
  t.add(Kernel::kGemm, DType::kBf16, {64, 64, 64, 0, 0, 0}, 7e-6);
  const ComputeCostModel model(c, KernelEfficiency{}, false, &t);
  Compute g;
  g.kernel = Kernel::kGemm;
  g.dtype = DType::kBf16;
  g.dims = {64, 64, 64, 0, 0, 0};
  EXPECT_EQ(model.time_s(g), 7e-6);
  g.dims = {128, 64, 64, 0, 0, 0};
  EXPECT_NE(model.time_s(g), 7e-6);
}

}  // namespace
}  // namespace tandem::sim::testing
