// The gradient buckets of one pipeline stage as the step generator lays them out, and the time
// their data-parallel reduction runs past the stage's last backward in the simulator.
//
// Layout (shared/param_layout.cc, make_param_layout): the stage's units (the embedding table on
// the first virtual stage, one unit a layer, the final norm and head or the tied table's copy on
// the last) taken in backward order, whole, into buckets that close once they hold
// strategy.bucket_mb MiB of the training dtype's elements (so a bucket's gradients are that many
// elements in the gradient dtype), at a model chunk's boundary, and around a tied table's copy
// (deferred: reduced after the others, its first and last stage's all-reduce first). With
// software.bucket_every_stage false (ZeRO 0-1) only the first stage's first chunk is split; each
// other stage and chunk is one bucket. Elements are padded to a multiple of dp x sp.
//
// Replay (sim/replay_engine.h: a task starts when the one before on its stream and every task it
// depends on are done): the reductions of ZeRO 0 and 1 run on the gradient-communication stream
// one after the other. With software.grad_reduce_overlap each starts from the moment the last
// micro-batch's backward has written its bucket's gradients; without it (and for a tied table's
// deferred copy either way) the training loop issues them after the whole backward, so each waits
// for the compute stream's last backward task (shared/grad_sync.cc sync_bucket; until session 15
// the generator gave them only their buffers' writers, so the replay overlapped them all the same:
// hest's finding). So with bucket k ready r_k seconds before the stage's backward ends (the
// backward of the layers that follow it in the backward; the embedding's and head's few kernels
// taken as none; r_k = 0 after the backward) and reduced in c_k, the stream ends at
// f = max_k (-r_k + sum_{j >= k} c_j) (k in the stream's order) and the time exposed after the
// backward is max(0, f).
#pragma once

#include <functional>
#include <vector>

#include "search/layer_probe.h"
#include "shared/scenario.h"

namespace tandem::search {

struct StageBucket {
  double elements = 0;           // on one rank, padded to the gradients' group
  double ready_before_end_s = 0;  // its gradients are written this long before the backward's end
  bool deferred = false;          // a tied table's copy (pp > 1): reduced after the others
};

// Stage `stage`'s buckets in backward order; layer_backward_s: one layer's backward of one
// micro-batch (recompute included).
std::vector<StageBucket> stage_buckets(const Scenario& point, const LayerCosts& layer, int stage, double layer_backward_s);

// Whether every bucket's reduction waits for the backward's end (ZeRO 0-1 without
// grad_reduce_overlap), as above.
bool reductions_wait_for_the_backward(const Scenario& point);

// The reductions' end after the backward's, as above, in the order the generator issues them on
// the stream (overlap on: the deferred ones last; off: bucket order). reduce_s(bucket): c_k.
double exposed_after_backward(const Scenario& point, const std::vector<StageBucket>& buckets,
                              const std::function<double(const StageBucket&)>& reduce_s);

}  // namespace tandem::search
