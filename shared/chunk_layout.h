// Parameter units packed into Gemini chunks (shared/chunk_plan.h) in place of gradient buckets,
// for strategy.offload params and auto: units in execution (forward) order, the chunk size
// searched over their sizes with the hidden size as interval (GeminiPlugin's hidden_dim),
// strategy.chunk_search_range_m and strategy.chunk_min_m; every chunk padded to its capacity and
// sharded over the data-parallel group like a bucket. The buckets keep their order (backward:
// bucket 0 is the last chunk); inside a chunk the units lie in forward order.
// Under offload params the first chunks in execution order, up to strategy.offload_fraction of
// the chunk bytes, are on the host (GradBucket::on_host); a chunk kept gathered never is.
// Under offload auto every chunk's optimizer states are on the host (GradBucket::host_optimizer),
// as Gemini's AutoPlacementPolicy.setup_grads_device sends the gradients of every chunk not kept
// gathered to the CPU (placement_policy.py:224-234 at 4f9953be335e) and GeminiDDP._init_chunks
// moves each fp32 master chunk to its gradients' device (gemini_ddp.py:865-874); the chunks the
// placement evicts (shared/auto_placement.h) also keep their parameters there; with
// strategy.gpu_margin_mem_ratio > 0 the chunks the margin holds keep their optimizer states on the
// device (GeminiOptimizer._maybe_move_fp32_params, gemini_optimizer.py:313-343).
#pragma once

#include "shared/param_layout.h"

namespace tandem {

bool uses_chunks(const StrategySpec& strategy);
// Replaces the layout's buckets by chunks.
// placement (offload auto, shared/auto_placement.h): the chunks on the host and those whose
// optimizer states are on the device (strategy.gpu_margin_mem_ratio), in execution order.
void pack_units_into_chunks(const Scenario& scenario, ParamLayout& layout,
                            const ChunkPlacement* placement = nullptr);

}  // namespace tandem
