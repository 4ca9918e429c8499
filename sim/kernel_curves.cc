#include "sim/kernel_curves.h"

#include <algorithm>
#include <array>
#include <cmath>

namespace tandem::sim {

namespace {

bool contains(const std::string& s, const char* what) { return s.find(what) != std::string::npos; }

// Measured bf16 dense peak of the GPU the attention curves were measured on (H100 80GB SXM5).
constexpr double kH100PeakTflops = 989.4;

// traces/reference/kernel_attention_h100.tsv: cuDNN fused attention, H100 80GB SXM5, bf16,
// batch * seq = 16k tokens, heads * head_dim = 2048 (Shah et al. 2024, FlashAttention-3,
// arXiv 2407.08608, Figures 5 and 6, the values printed on the bars), TFLOP/s at
// seq = 512, 1k, 2k, 4k, 8k, 16k, without causal mask.
constexpr std::array<double, 6> kFwd64 = {335, 373, 395, 408, 412, 413};
constexpr std::array<double, 6> kFwd128 = {497, 574, 617, 609, 600, 595};
constexpr std::array<double, 6> kBwd64 = {266, 348, 395, 417, 432, 433};
constexpr std::array<double, 6> kBwd128 = {305, 408, 465, 499, 518, 516};
// Forward, head_dim 128, with the causal mask (TFLOP/s counted on the half of the square it computes).
constexpr std::array<double, 6> kFwd128Causal = {315, 410, 484, 518, 529, 539};

// Linear in log2(seq) between the measured lengths 2^9 .. 2^14, flat outside.
double at_seq(const std::array<double, 6>& v, double seq) {
  const double x = std::clamp(std::log2(std::max(seq, 1.0)) - 9.0, 0.0, 5.0);
  const size_t i = std::min<size_t>(size_t(x), 4);
  const double f = x - double(i);
  return v[i] * (1 - f) + v[i + 1] * f;
}

}  // namespace

GpuFamily gpu_family(const std::string& g) {
  for (const char* h : {"H100", "H200", "GH200", "h100", "h200", "gh200"})
    if (contains(g, h)) return GpuFamily::kHopper;
  return GpuFamily::kAmpere;
}

GemmCurve gemm_curve(GpuFamily family, double peak_flops, double hbm_bytes_s, int sms, bool fp8) {
  GemmCurve c;
  c.sms = sms > 0 ? sms : (family == GpuFamily::kHopper ? 132 : 108);
  c.k_half = hbm_bytes_s > 0 ? kKHalfPerBalance * peak_flops / hbm_bytes_s : 0;
  // Hopper: fit with kKHalfPerBalance on the XLA table. Ampere: the A100 MAMF, 267.9 of 312
  // TFLOP/s at 6912 x 16384 x 2048 (a whole number of waves: quantisation 1), divided by that
  // shape's k-term 2048 / (2048 + 0.867 * 312e12 / 2039e9 = 132.7).
  c.max_efficiency = family == GpuFamily::kHopper ? 0.89 : (267.9 / 312.0) * (2048.0 + 132.7) / 2048.0;
  if (fp8 && family == GpuFamily::kHopper) c.max_efficiency = kHopperFp8MaxEfficiency;
  return c;
}

double gemm_efficiency(const GemmCurve& c, double batch, double m, double n, double k) {
  const double tiles = batch * std::ceil(m / 128.0) * std::ceil(n / 128.0);
  const double waves = std::ceil(tiles / c.sms);
  const double quantisation = std::min(1.0, batch * m * n / (waves * c.sms * 128.0 * 128.0));
  return c.max_efficiency * quantisation * k / (k + c.k_half);
}

double flash_attention_efficiency(GpuFamily family, bool backward, bool causal, double seq, double head_dim,
                                  double peak_tflops) {
  if (family != GpuFamily::kHopper || peak_tflops <= 0) return -1;
  const double w = std::clamp((head_dim - 64.0) / 64.0, 0.0, 1.0);
  const double rate = backward ? at_seq(kBwd64, seq) * (1 - w) + at_seq(kBwd128, seq) * w
                               : at_seq(kFwd64, seq) * (1 - w) + at_seq(kFwd128, seq) * w;
  // The FlashAttention benchmarks count a backward as 2.5 forwards (it recomputes the scores);
  // tandem counts 2: the same time is 2 / 2.5 of the printed rate on tandem's count.
  double eff = rate / kH100PeakTflops * (backward ? 2.0 / 2.5 : 1.0);
  // The causal kernel computes half the square at the measured causal/full rate ratio (forward,
  // head_dim 128: the only causal series measured; used for the backward and head_dim 64 too).
  if (causal) eff *= 2.0 * at_seq(kFwd128Causal, seq) / at_seq(kFwd128, seq);
  return eff;
}

double memory_efficiency(GpuFamily) {
  // traces/reference/kernel_memory_bandwidth.tsv: a streaming read on an A100 80GB SXM reaches
  // 1.80 of 2.04 TB/s (88 %; the thread cites a GTC talk where no kernel passed ~90 %). No Hopper
  // point in the data: the same fraction.
  return 0.88;
}

}  // namespace tandem::sim
