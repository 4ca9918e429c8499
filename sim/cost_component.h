// The cost components a prediction is made of, for its prediction interval
// (sim/prediction_interval.h): compute by kind, collectives by fabric, p2p, host copies.
//
// Attribution (docs/sim.md "Prediction intervals"): each rank's busy time is split among them.
//  - compute stream: each kernel's cost-model time goes to its kind (GEMM, attention, optimizer:
//    Adam or any optimizer-phase kernel, vector: every other kernel and device-to-device copies);
//  - exposed communication (moving data while the compute stream is idle): to the fabric of what
//    is in flight (a collective whose group stays on one node: NVLink, else NIC; a p2p message:
//    p2p); time when several of them are exposed together is shared equally among them;
//  - offload (nothing but host work or host copies running): host copies (PCIe) and host CPU
//    work, shared equally likewise.
#pragma once

#include <array>
#include <cstdint>

#include "shared/schedule.h"

namespace tandem::sim {

enum class Component : uint8_t { kGemm, kAttention, kVector, kOptimizer, kHost, kNvlink, kNic, kP2P, kPcie };
inline constexpr int kComponentCount = 9;
using ComponentTimes = std::array<double, kComponentCount>;

// "gemm", "attention", "vector", "optimizer", "host", "nvlink", "nic", "p2p", "pcie".
const char* component_name(Component c);
// The component of that name; false when there is none.
bool component_from_name(const char* name, Component& out);

// A compute task's component: host CPU work when it runs on the host, else by kernel and phase.
inline Component compute_component(const Compute& c, bool on_host) {
  if (on_host) return Component::kHost;
  if (c.kernel == Kernel::kAdam || c.phase == Phase::kOptimizer) return Component::kOptimizer;
  if (c.kernel == Kernel::kGemm) return Component::kGemm;
  // A ring-attention step is a FlashAttention kernel over a block (shared/ring_attention.h).
  if (c.kernel == Kernel::kAttention || c.kernel == Kernel::kAttentionBwd || c.kernel == Kernel::kRingAttention ||
      c.kernel == Kernel::kRingAttentionBwd)
    return Component::kAttention;
  return Component::kVector;
}

}  // namespace tandem::sim
