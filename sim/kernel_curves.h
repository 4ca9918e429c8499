// Kernel efficiencies from published measurements (the data points, with their sources, are in
// traces/reference/kernel_*.tsv; the fit and its residuals per curve are in docs/accuracy.md and
// are printed by tests/bench/fit_kernel_curves.py):
//  - GEMM: max_efficiency * tile/wave quantisation (128x128 output tiles over waves of SMs: a
//    partial last wave runs as long as a full one) * k / (k + k_half). k_half, the reduction length
//    at which a tile's fixed prologue/epilogue costs as much as its main loop, grows with the
//    GPU's machine balance: k_half = kKHalfPerBalance * peak FLOP/s / HBM byte/s. Hopper's
//    max_efficiency and kKHalfPerBalance are fit on XLA's measured sm_90 bf16 GEMM table; the
//    Ampere max_efficiency follows from the measured A100 maximum achievable matmul FLOP/s (MAMF).
//  - flash attention (Hopper): cuDNN fused attention as measured in the FlashAttention-3 paper
//    (Transformer Engine prefers cuDNN's backend on sm90), by sequence and head_dim, forward and
//    backward; a causal mask skips half of the FLOPs at the measured causal rate.
//  - attention without flash: the kernels it runs (batched score and context GEMMs on the GEMM
//    curve, softmax and dropout passes over the s x s scores at the streaming bandwidth).
//  - streaming kernels: the measured achievable fraction of the HBM bandwidth.
#pragma once

#include <string>

namespace tandem::sim {

enum class GpuFamily { kAmpere, kHopper };  // a name neither A100 nor H100/H200/GH200 is costed as Ampere

GpuFamily gpu_family(const std::string& gpu_name);

// Fit on traces/reference/kernel_gemm_h100_xla.tsv (tests/bench/fit_kernel_curves.py).
inline constexpr double kKHalfPerBalance = 0.867;  // k_half / (peak FLOP/s / HBM byte/s)

struct GemmCurve {
  double max_efficiency = 0;  // of the dense peak, for well-shaped GEMMs with k >> k_half
  double k_half = 0;          // elements of k
  int sms = 0;
};

// Hopper FP8 GEMMs (e4m3/e5m2 operands, per-tensor scaling) reach a lower fraction of their
// (twice as high) peak than bf16 ones. From the one published H100 measurement that separates
// the two at a training shape: torchao's Float8Linear forward + backward at M, K, N = 4096, 8192,
// 16384 runs 1.39x faster than bf16 (pytorch/ao torchao/float8/README.md, "Performance", at
// 0cf1281a38bdd8c84b11549ffc49a63eb3a92d40; dynamic scaling, torch.compile). With the bf16 side on
// the bf16 curve and torchao's casts at the streaming bandwidth (6 bytes an element of input,
// weight and output gradient: an amax pass, a cast, the transposed copy), the three FP8 GEMMs
// take what is left: max_efficiency 0.773 (0.725 if the casts moved 4 bytes an element).
// docs/accuracy.md section 8 has the derivation and why XLA's sm_90 FP8 table was not used.
inline constexpr double kHopperFp8MaxEfficiency = 0.773;

// The curve of a GPU with the given dense peak (FLOP/s) and HBM bandwidth (byte/s); sms <= 0: the
// family's SM count (108 on A100, 132 on H100/H200). fp8: the curve of FP8 GEMMs at the FP8 peak.
GemmCurve gemm_curve(GpuFamily family, double peak_flops, double hbm_bytes_s, int sms, bool fp8 = false);

// Fraction of the peak that `batch` independent m x n x k products reach (tile/wave quantisation
// over batch * tiles, times the k-term).
double gemm_efficiency(const GemmCurve& curve, double batch, double m, double n, double k);

// Flash attention throughput as a fraction of the peak, for the FLOPs tandem counts
// (4 * b * s^2 * heads * head_dim forward, twice that backward: the full, unmasked square). With a
// causal mask the kernel skips half of the square; the returned fraction includes that saving (it
// may exceed 1). Negative when the family has no measured curve (Ampere: the caller falls back).
double flash_attention_efficiency(GpuFamily family, bool backward, bool causal, double seq, double head_dim,
                                  double peak_tflops);

// Ampere flash attention without a measured curve here: the former constants, of the GEMM peak,
// times head_dim / (head_dim + 96) (docs/accuracy.md says why they stay).
inline constexpr double kFlashFallbackForward = 0.55, kFlashFallbackBackward = 0.45, kFlashFallbackKHalf = 96;

// Achievable fraction of the HBM bandwidth for streaming kernels.
double memory_efficiency(GpuFamily family);

}  // namespace tandem::sim
