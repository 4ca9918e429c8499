// strategy.offload auto (Gemini's auto placement, colossalai/zero/gemini/placement_policy.py
// AutoPlacementPolicy, commit 4f9953be335e), planned before the run so that both backends execute
// the same moves. A warm-up pass generates the program with every chunk on the device and walks its
// memory task by task (the non-model memory at every task is what remains once the chunks' bytes
// are taken out). While the peak exceeds the cap, HBM less a margin (Gemini's
// steady_cuda_cap_ratio 0.9: 10 % kept free), the chunk on the device whose next use after the
// peak task is furthest (Belady, as Gemini picks its victims) moves to the host, and the program is
// generated and walked again. A chunk on the host is gathered to the device before each pass that
// uses it (the next chunk prefetched, shared/grad_sync.cc) and freed after, so at every task the
// device holds what the task needs. If even with every chunk on the host the peak exceeds the cap,
// planning fails (out of memory) with the task, the bytes it needs and the bytes available.
//
// Unlike Gemini, whose eviction happens during the step, a chunk's place is fixed for the whole
// iteration: the plan is the placement Gemini would reach in its steady state at the peak.
#pragma once

#include <functional>
#include <vector>

#include "shared/schedule.h"

namespace tandem {

inline constexpr double kAutoDeviceCapRatio = 0.9;  // GeminiPlugin steady_cuda_cap_ratio

struct AutoPlacement {
  std::vector<bool> host;           // per chunk, in execution order
  int64_t peak_device_bytes = 0;    // of the program with this placement
  int64_t cap_bytes = 0;            // kAutoDeviceCapRatio * HBM
  int64_t warmup_peak_bytes = 0;    // every chunk on the device
};

// `generate(host)`: the program of the rank planned (one of identical ranks) with that placement;
// `chunks`: how many chunks the layout has.
AutoPlacement plan_auto_placement(const Scenario& scenario, int chunks,
                                  const std::function<Program(const std::vector<bool>& host)>& generate);

}  // namespace tandem
