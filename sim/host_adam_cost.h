// Time of the optimizer step on the host CPU (offload optimizer / params / auto: Adam on the host
// stream of a rank), from the node's memory bandwidth and cores (cluster.host_memory_bandwidth_gbps,
// host_cores, host_core_ghz, host_simd_fp32_lanes; docs/offload.md, "Host Adam").
//
// The kernel is Colossal-AI's HybridAdam CPU path (extensions/csrc/kernel/x86/cpu_adam.cpp at
// 61ab7e98, the DeepSpeed CPU Adam it derives from): per element it streams the fp16 gradient in,
// the fp32 master, m and v in and out, and the fp16 parameter out, 2 + 3 * 8 + 2 = 28 bytes for
// fp16/bf16 training (Compute::bytes_moved of kAdam), and issues 11 SIMD arithmetic instructions
// per vector of `lanes` elements (AdamW with a loss scale: the gradient divided by the scale, m
// scaled and updated (mul, fma), v scaled, the gradient squared, v updated (mul, mul, fma), sqrt,
// fma with eps, the divide, the decoupled weight decay and the update (fma, fma)).
//
// Every rank of a node runs its step at the same time (SPMD), so each gets 1/r of the node's
// memory bandwidth and of its cores, r = the node's ranks:
//   time = max(bytes / (bandwidth / r), vectors * 11 / ((cores / r) * clock))
// The compute term issues one vector instruction per cycle per core: Zen 2 and Sapphire Rapids
// have two FMA pipes, their divide and square root issue slower; neither is separated here (no
// cited throughput). With the presets' figures the memory term is the larger by 10x or more.
#pragma once

#include "shared/scenario.h"

namespace tandem::sim {

// SIMD arithmetic instructions per vector of Colossal-AI's CPU AdamW step (above).
inline constexpr double kHostAdamOpsPerVector = 11;

struct HostAdamTime {
  double memory_s = 0;   // bytes over the rank's share of the node's memory bandwidth
  double compute_s = 0;  // 0 when the cluster gives no cores / clock / lanes
  double time_s() const { return memory_s > compute_s ? memory_s : compute_s; }
};

// `elements` Adam updates moving `bytes` on one rank of a node with `ranks_on_node` ranks.
// Requires cluster.host_memory_bandwidth_gbps > 0.
HostAdamTime host_adam_time(const ClusterSpec& cluster, int ranks_on_node, double elements, double bytes);

// The ranks that share one node's host: min(gpus_per_node, gpus).
int ranks_on_node(const ClusterSpec& cluster);

}  // namespace tandem::sim
