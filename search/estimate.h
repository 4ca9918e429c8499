// The analytical estimate of one iteration of a resolved point, from its layer's measured costs
// (search/layer_probe.h) and closed forms for what the simulator would otherwise replay.
// With L layers, pp stages, v virtual stages, m = global_batch / (dp * micro_batch) micro-batches:
//
//   layer       t_l  = forward + backward + recompute + tp_comm                (one micro-batch)
//               tp_comm: the time the layer's compute stream waits for its tensor/sequence-
//                      parallel collectives and ring exchanges, the probe's program replayed
//                      (search/layer_probe.h, search/probe_replay.h): what the program overlaps
//                      (dgrad all-reduce under the wgrad, userbuffers chunks) is hidden
//   stage       t_s  = (L / pp) * t_l, plus first_s on stage 0 and last_s on stage pp-1
//   pipeline    T_p  = m * max_s t_s + (sum_s t_s - max_s t_s) / v
//                      (1F1B / GPipe: the last micro-batch's trip through the other stages, the
//                      bubble (pp-1)/m of Narayanan et al. SC21 for equal stages; interleaved:
//                      divided by v)
//               + 2 (pp-1) p2p: the activation's and its gradient's trip between neighbouring
//                      stages in the fill and the drain (bytes mb*seq*hidden / (tp with megatron
//                      sp), priced between rank 0 and rank tp*sp, the next stage's)
//   data par.   the generator's gradient buckets of the first and the last stage (bucket_mb of
//               training-dtype elements, whole layers: search/grad_buckets.h), each all-reduced
//               (ZeRO 0) or reduce-scattered (1-3) over dp (dp x sp with ulysses, ring_attention
//               or ring: the data-and-sequence group) at its own size. ZeRO 0-1: the last
//               micro-batch's reductions one after the other, each from when the backward has
//               written its bucket, as the simulator runs them with grad_reduce_overlap on or off
//               (the same buffer dependencies): exposed, the stream's end past the backward's (the
//               last stage's backward ends (pp-1) stage backwards earlier). ZeRO 2-3: every
//               micro-batch's, all exposed (the shard's accumulate on the compute stream waits).
//               ZeRO 1-2: parameter all-gather after the step, the last bucket's exposed and the
//               others under the later buckets' Adam, or with overlap_param_gather
//               max(the last bucket's, t_ag - the stage's first forward); ZeRO 3: the stage's
//               parameters gathered for every forward and backward: max(0, t_ag - that pass)
//               each, per micro-batch. Gemini's chunks (offload params, auto): bucket_mb bytes of
//               gradients a bucket, t_dp after the backward without grad_reduce_overlap, else
//               max(one bucket, t_dp - the stage's backward) (not yet the generator's chunks).
//   optimizer   the probe's optimizer kernels per parameter element x the elements this rank
//               updates (the stage's parameters / the gradients' group under ZeRO), plus its
//               fixed collectives; with offload optimizer the kernels are the host's Adam and the
//               gradients' and parameters' PCIe copies are added (per element, one after the
//               other: no overlap of the copies with the host's Adam is assumed).
//   offload     auto, micro-batches 2..m: each chunk's accumulated gradient shard up, the new
//   auto        gradient added, the sum down again (Gemini's rearrange_accumulated_grad_chunk,
//               shared/grad_sync.cc grads_to_host), on the two copy streams (one direction each,
//               at shared/host_copy_rate's per-direction rate) while the stage's backward runs:
//               (m - 1) max(0, t_down - the stage's backward), t_down = the probe's gradient
//               downloads per element x the elements this rank updates. The first micro-batch's
//               download is in the optimizer's copies. Plus the chunks the whole stage evicts,
//               per operator, which the probe's few layers do not: search/offload_estimate.h.
//   iteration   T = T_p + exposed data-parallel time + optimizer + offload.
#pragma once

#include <cstdint>

#include "search/layer_probe.h"
#include "shared/scenario.h"

namespace tandem::search {

struct Estimate {
  double iteration_s = 0;
  double compute_s = 0;    // kernels on the slowest stage: m micro-batches (recompute included)
  double recompute_s = 0;  // part of compute_s
  double bubble_s = 0;     // pipeline fill and drain (p2p included)
  double comm_s = 0;       // exposed: tensor parallel (every micro-batch), data parallel, ZeRO
  double optimizer_s = 0;
  double offload_s = 0;    // exposed host copies beyond the optimizer's (offload auto's round trips)
  // The layer probe's LayerCosts::layer_stored_bytes (for the memory bound, search/memory_bound.h).
  int64_t layer_stored_bytes = 0;
  // The largest of bubble, comm, recompute, offload (what limits the point beyond its kernels).
  const char* limit() const;
};

Estimate estimate(const Scenario& point, const LayerCosts& layer, CommCost& comm);

}  // namespace tandem::search
