// offload auto's per-operator chunk moves (shared/auto_eviction.cc, docs/offload.md) priced for
// the search's estimate (search/estimate.h, "offload auto") without generating the point's program.
//
// The layer probe (search/layer_probe.h) is a few layers whose auto plan evicts for the probe's own
// memory, not the whole model's, so it cannot see these moves. With the whole stage's figures:
//
//   excess   X = max(0, chunk parameters resident on the device (every chunk's shard under ZeRO-3,
//                the whole chunk without data parallelism)
//              + what the operator at the backward's start gathers (under ZeRO-3 its chunk and the
//                next, prefetched, whole: 2 x the largest chunk)
//              + its non-model bytes: the stored activations of search/memory_bound.h
//                (stored_layer_forwards x layer_stored_bytes) and two gradient chunks (the one
//                computed and the one whose shard is on its way down, shared/grad_sync.cc)
//              - 0.9 x HBM (Gemini's steady_cuda_cap_ratio, placement_policy.py:137 at 4f9953be))
//
// Furthest-next-use eviction moves X out before the backward's peak and brings it back for its
// next use (the 43-layer row of docs/offload.md: each evicted chunk down and up once a micro-batch),
// so each micro-batch moves X down and X up at the copy rate of search/comm_cost.h: the copy down
// is synchronous (the compute stream waits for it before the Free, as Gemini's move_chunk does) and
// exposed whole; the copy up runs on the h2d stream ahead of the forward that needs it and is
// exposed beyond the stage's forward, as the ZeRO-3 gather term of search/estimate.cc is:
//
//   t = m x (copy(X) + max(0, copy(X) - the stage's forward))
//
// X is a lower bound on the plan's excess (the non-model term is memory_bound's lower bound: it
// leaves out the working set of the pass itself), so t is too; 0 when the stage fits.
#pragma once

#include <cstdint>

#include "search/comm_cost.h"
#include "shared/scenario.h"

namespace tandem::search {

struct AutoEvictionCost {
  double excess_bytes = 0;  // X above, per micro-batch each way
  double exposed_s = 0;     // t above
};

// point: a resolved point under offload auto (else {0, 0}); layer_stored_bytes: its layer probe's
// LayerCosts::layer_stored_bytes; stage_forward_s: the stage's forward kernels of one micro-batch.
AutoEvictionCost auto_eviction_cost(const Scenario& point, int64_t layer_stored_bytes, double stage_forward_s,
                                    const CommCost& comm);

}  // namespace tandem::search
