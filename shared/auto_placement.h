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
// Which are evicted, and when: per operator, as Gemini's GeminiZeROHook.pre_op
// (gemini_hook.py:27-74) calls GeminiManager.adjust_layout (gemini_mgr.py:98-121), which asks for
// the chunks the operator needs (_get_layout_info, :139-155: a chunk on the host needs all its
// bytes on the device, a device chunk not gathered what it lacks of its shard) and lets
// AutoPlacementPolicy.evict_tensors (placement_policy.py:149-211) free room: model data may use
// 0.9 x HBM (steady_cuda_cap_ratio, :137, :185) less the non-model data of this period and the
// next (next_period_non_model_data_usage, :184); the victims are the chunks on the device, not in
// use, whose next use is furthest (Belady, _sort_can_evict_chunks :213-222); it fails when it
// cannot free enough (:205-209). A chunk brought to the device stays there until an operator's
// need evicts it (ChunkManager.access_chunk keeps it; only evict_tensors moves it down).
//
// tandem, where an "operator" is a parameter unit's forward or backward pass (ensure_params,
// shared/grad_sync.cc: a kernel reads one unit's parameters) and the optimizer step is the last:
//  1. A warm-up program (every chunk on the device, nothing moved) is walked task by task; the
//     non-model bytes of an operator's period are the device bytes other than chunk parameters
//     between its start and the next operator's, the most over its period and the next (Gemini's
//     two sampling moments). Its sequence of needed chunks is Gemini's compute list.
//  2. The program is generated again with eviction at every operator (adjust_layout,
//     shared/auto_eviction.cc): if the chunk parameters on the device now, plus what the
//     operator needs brought or gathered, plus its non-model bytes exceed the cap, chunks not in
//     use are evicted furthest next use first (cyclic over the iteration: ties at the end of the
//     iteration go by the next iteration's use). An evicted chunk's shard is copied down (d2h) and
//     freed; when an operator needs it again it is copied up (h2d) and stays until evicted again
//     or the optimizer step (the host Adam writes its host shard; the device copy is dropped and
//     comes up at its first use in the next iteration: Gemini copies the updated parameters into
//     the chunk still on the device instead, the same bytes one way per iteration).
//  3. Chunks start the iteration on the device unless an eviction ever picked them: such a chunk
//     lives on the host between iterations (GradBucket::on_host), and the plan is made again from
//     the warm-up with it there, until no chunk that starts on the device is picked. So a chunk is
//     either on the device for the whole iteration or moves as above.
// Each period then holds at most the cap (its chunk parameters only shrink after its start, its
// non-model bytes are the warm-up's), so the planned peak is under the cap; it is checked on the
// result. If an operator's own chunks with its non-model bytes exceed the cap even with every
// other chunk evicted, planning fails (out of memory) with the operator, the bytes it needs and
// the bytes available.
//
// Gemini's own warm-up iteration (the first, which records the memory statistics) reserves 80 %
// of HBM for non-model data (warmup_non_model_data_ratio 0.8, :136, :141, :179-181): model data
// may use 0.2 x HBM, and it fails (:205-209) if the chunks one operator needs exceed that even
// with every other chunk evicted. The largest chunk gathered is that need here (an operator reads
// parameters of one unit, and a unit lies in one chunk): planning fails above 0.2 x HBM.
//
// strategy.gpu_margin_mem_ratio > 0 (GeminiOptimizer._maybe_move_fp32_params, gemini_optimizer.py:
// 313-343 at 4f9953be, run at the first step, after the warm-up's forward and backward): the margin
// is the device's capacity less the warm-up's peak of all CUDA memory (ChunkMemStatsCollector.
// cuda_margin_mem, memory_tracer/chunk_memstats_collector.py:33-36: colo_device_memory_capacity -
// max_overall_cuda); ratio x margin / 4 bytes (HybridAdam's num_fp32_shards_per_param = 4:
// weight, gradient, momentum, variance; nn/optimizer/hybrid_adam.py:61) may hold fp32 master
// shards: walking the chunks in parameter (execution) order, a chunk whose fp32 shard
// (chunk32.payload_mem, shard elements x 4 bytes) keeps the bytes taken so far strictly under that
// budget moves to the device with its parameters and gradients, and Adam steps it there (HybridAdam
// runs the fused GPU kernel for CUDA parameters); a chunk that does not fit is skipped and the walk
// goes on. tandem takes the warm-up's peak as the peak of the plan made with every optimizer state
// on the host (steps 1-3; the warm-up program's when nothing is evicted), marks the chosen chunks
// (ChunkPlacement::device_optimizer: GradBucket::host_optimizer false, never evicted) and makes the
// plan again from step 1, so that the per-operator eviction counts their states as the device
// memory they take.
#pragma once

#include <functional>
#include <vector>

#include "shared/param_layout.h"
#include "shared/schedule.h"

namespace tandem {

inline constexpr double kAutoDeviceCapRatio = 0.9;  // GeminiPlugin steady_cuda_cap_ratio
inline constexpr double kAutoWarmupModelDataRatio = 1 - 0.8;  // 1 - warmup_non_model_data_ratio
inline constexpr int kHybridAdamFp32ShardsPerParam = 4;  // HybridAdam.num_fp32_shards_per_param

// GeminiOptimizer._maybe_move_fp32_params's choice: per chunk in execution order, whether its
// optimizer states go to the device, given each chunk's fp32 shard bytes (0: a chunk that cannot
// move, kept gathered) and the budget ratio x margin / 4.
std::vector<bool> margin_chunks(const std::vector<int64_t>& fp32_shard_bytes, double budget_bytes);

// What the per-operator eviction reads (made from the warm-up, step 1 above).
struct AutoOperatorPlan {
  int64_t cap_bytes = 0;
  std::vector<int64_t> non_model;     // per operator: the warm-up's non-model bytes (above)
  std::vector<std::vector<int>> uses;  // per operator: the buckets it needs (Gemini's compute list)
};

// A chunk moved by the per-operator eviction.
struct AutoMove {
  int op = 0;       // the operator before which it moved
  int bucket = 0;   // buckets are in backward order: bucket 0 is the last chunk
  bool up = false;  // true: host to device; false: evicted (device to host)
  int64_t bytes = 0;
};

// What the generator records while writing a rank's program under offload auto.
struct AutoRecord {
  std::vector<TaskId> op_start;              // per operator: its first task
  std::vector<std::vector<int>> uses;        // per operator: the buckets it needs
  std::vector<int> op_unit;                  // per operator: the unit, -1 for the optimizer step
  std::vector<char> op_forward;              // per operator: a forward pass
  std::vector<AutoMove> moves;
  int victim = -1;         // a bucket that starts on the device and had to be evicted
  int failed_op = -1;      // an operator whose own chunks do not fit
  int64_t failed_need = 0, failed_non_model = 0;
};

struct AutoPlacement {
  ChunkPlacement chunks;            // per chunk, in execution order: on the host, optimizer on the device
  AutoOperatorPlan plan;            // empty when the warm-up fits (nothing moves)
  std::vector<AutoMove> moves;      // rank 0's chunk moves per iteration
  int64_t peak_device_bytes = 0;    // of the program with this placement
  int64_t cap_bytes = 0;            // kAutoDeviceCapRatio * HBM
  int64_t warmup_peak_bytes = 0;    // every chunk on the device
  // strategy.gpu_margin_mem_ratio > 0: HBM less the peak of the plan with every optimizer state on
  // the host (Gemini's cuda_margin_mem), and the fp32 bytes ratio x margin / 4 may hold.
  int64_t margin_bytes = 0;
  double margin_budget_bytes = 0;
};

// `generate(placement, plan, record)`: the program of the rank planned (one of identical ranks)
// with the chunks placed by `placement`, evicting per operator by `plan` (none when null), writing
// what it did into `record`; `fp32_shard_bytes`: per chunk in execution order, its fp32 master
// shard (0 for a chunk kept gathered, which Gemini neither evicts nor moves); `largest_chunk_bytes`:
// the largest chunk's parameters gathered (0 when the chunks are kept gathered).
AutoPlacement plan_auto_placement(
    const Scenario& scenario, const std::vector<int64_t>& fp32_shard_bytes, int64_t largest_chunk_bytes,
    const std::function<Program(const ChunkPlacement& placement, const AutoOperatorPlan* plan, AutoRecord* record)>&
        generate);

}  // namespace tandem
