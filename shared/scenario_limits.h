// The bounds the scenario loader puts on every number (README, "Input limits"). Counts are capped
// where they drive loops and allocations (layers, GPUs); the sizes derived from them are computed
// in checked 64-bit arithmetic (shared/resource_limit.h) and refused when they do not fit. Figures
// of the hardware must be finite and at most a stated physical maximum, far above any device
// built or announced, so that the simulator's arithmetic on them stays finite and exact enough.
#pragma once

#include <cstdint>

namespace tandem {

// Model and cluster counts.
inline constexpr int kMaxLayers = 1 << 16;         // 65,536 transformer layers (GPT-3 has 96)
inline constexpr int kMaxHidden = 1 << 20;         // hidden (and heads)
inline constexpr int kMaxFfnHidden = 1 << 22;
inline constexpr int kMaxSeqLen = 1 << 24;         // 16,777,216 tokens per sequence
inline constexpr int kMaxGpus = 1 << 20;           // 1,048,576 GPUs in one job
inline constexpr int kMaxGpusPerNode = 1 << 10;    // also NICs per node
inline constexpr int kMaxMicroBatch = 1 << 20;     // sequences per micro-batch

// Hardware figures (a figure of 0 is "not set" where the loader allows it).
inline constexpr double kMaxTflops = 1e6;          // 10^18 flop/s = 1 exaflop/s per GPU
inline constexpr double kMaxBandwidthGbps = 1e6;   // 10^15 B/s = 1 PB/s per link or memory
inline constexpr double kMaxLatencyUs = 1e6;       // 1 s per message or kernel launch
inline constexpr double kMaxMemoryGib = 1e6;       // about a pebibyte of HBM per GPU or host memory per node
inline constexpr double kMaxOversubscription = 1024;
inline constexpr double kMaxBucketMb = 1e6;        // about a tebibyte per gradient bucket

}  // namespace tandem
