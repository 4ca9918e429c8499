// strategy.offload auto: Gemini's auto placement (colossalai/zero/gemini/, commit 4f9953be335e),
// planned before the run so that both backends execute the same moves.
//
// What lives where (placement_policy.py:224-234, gemini_ddp.py:865-874, GeminiPlugin's default
// gpu_margin_mem_ratio 0.0 at gemini_plugin.py:463): the optimizer states of every chunk not kept
// gathered are on the host and HybridAdam steps them there (shared/chunk_layout.h,
// GradBucket::host_optimizer): each chunk's reduced gradient shard goes down after the backward
// and its updated parameter shard comes back up, as under offload optimizer. Only parameter chunks
// are evicted.
//
// Which are evicted: AutoPlacementPolicy.evict_tensors (placement_policy.py:149-211) lets model data
// use, in steady state, 0.9 x HBM (steady_cuda_cap_ratio, :137, :185) less the non-model data of
// the coming period (:184); its victims are the chunks whose next use is furthest (Belady,
// _sort_can_evict_chunks :213-222); it fails when it cannot free enough (:205-209). Here a warm-up
// pass generates the program with every parameter chunk on the device and walks its memory task
// by task; while the peak exceeds 0.9 x HBM, the device chunk whose next use after the peak task is
// furthest moves to the host, and the program is generated and walked again. A chunk on the host
// is gathered to the device before each pass that uses it (the next chunk prefetched,
// shared/grad_sync.cc) and freed after. If even with every chunk on the host the peak exceeds the
// cap, planning fails (out of memory) with the task, the bytes it needs and the bytes available.
//
// Gemini's own warm-up iteration (the first, which records the memory statistics) reserves 80 %
// of HBM for non-model data (warmup_non_model_data_ratio 0.8, :136, :141, :179-181): model data
// may use 0.2 x HBM, and it fails (:205-209) if the chunks one operator needs exceed that even
// with every other chunk evicted. The largest chunk gathered is that need here (an operator reads
// parameters of one unit, and a unit lies in one chunk): planning fails above 0.2 x HBM.
//
// Unlike Gemini, whose eviction happens during the step, a chunk's place is fixed for the whole
// iteration: the plan is the placement Gemini would reach in its steady state at the peak.
#pragma once

#include <functional>
#include <vector>

#include "shared/schedule.h"

namespace tandem {

inline constexpr double kAutoDeviceCapRatio = 0.9;  // GeminiPlugin steady_cuda_cap_ratio
inline constexpr double kAutoWarmupModelDataRatio = 1 - 0.8;  // 1 - warmup_non_model_data_ratio

struct AutoPlacement {
  std::vector<bool> host;           // per chunk, in execution order
  int64_t peak_device_bytes = 0;    // of the program with this placement
  int64_t cap_bytes = 0;            // kAutoDeviceCapRatio * HBM
  int64_t warmup_peak_bytes = 0;    // every chunk on the device
};

// `generate(host)`: the program of the rank planned (one of identical ranks) with that placement;
// `chunks`: how many chunks the layout has; `largest_chunk_bytes`: the largest chunk's parameters
// gathered (0 when the chunks are kept gathered: Gemini never evicts those).
AutoPlacement plan_auto_placement(const Scenario& scenario, int chunks, int64_t largest_chunk_bytes,
                                  const std::function<Program(const std::vector<bool>& host)>& generate);

}  // namespace tandem
