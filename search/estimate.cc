#include "search/estimate.h"

#include "search/grad_buckets.h"
#include "search/offload_estimate.h"
#include "shared/chunk_layout.h"
#include "shared/sequence_split.h"

#include <algorithm>
#include <cmath>
#include <vector>

namespace tandem::search {

const char* Estimate::limit() const {
  if (offload_s > bubble_s && offload_s > comm_s && offload_s > recompute_s) return "offload";
  if (bubble_s >= comm_s && bubble_s >= recompute_s && bubble_s > 0) return "bubble";
  if (comm_s >= recompute_s && comm_s > 0) return "exposed comm";
  if (recompute_s > 0) return "recompute";
  return "compute";
}

namespace {

// Gemini's chunks (offload params and auto, shared/chunk_layout.h): the stage's gradients in
// buckets of bucket_mb bytes, each reduced over the group (its cost at one bucket's size).
double chunked_data_parallel_s(const Scenario& sc, double stage_params, double stage_forward, double stage_backward,
                               double adam_s, const std::vector<int>& members, CommCost& comm) {
  const StrategySpec& s = sc.strategy;
  const double micro = double(s.micro_batches());
  double comm_s = 0;
  const double grad_bytes = stage_params * dtype_bytes(sc.grad_dtype());
  const double bucket = std::max(1.0, s.bucket_mb * 1048576.0);
  const double buckets = std::ceil(grad_bytes / bucket), bucket_bytes = grad_bytes / buckets;
  const CollectiveOp reduce = s.zero_stage == 0 ? CollectiveOp::kAllReduce : CollectiveOp::kReduceScatter;
  const double one = comm.collective_s(reduce, members, bucket_bytes), all = buckets * one;
  if (s.zero_stage >= 2)  // every micro-batch; the shard's accumulate on the compute stream waits for it
    comm_s += micro * all;
  else
    comm_s += sc.software.grad_reduce_overlap ? std::max(one, all - stage_backward) : all;
  if (s.zero_stage >= 1) {
    const double param_bytes = stage_params * dtype_bytes(sc.param_dtype());
    const double pbuckets = std::ceil(param_bytes / bucket);
    const double gone = comm.collective_s(CollectiveOp::kAllGather, members, param_bytes / pbuckets);
    const double gather = pbuckets * gone;
    if (s.zero_stage == 3)
      comm_s += micro * (std::max(0.0, gather - stage_forward) + std::max(0.0, gather - stage_backward));
    else
      // Without overlap_param_gather each bucket's gather follows its own Adam, under the
      // later buckets' (the optimizer's time but one bucket's).
      comm_s += sc.software.overlap_param_gather ? std::max(gone, gather - stage_forward)
                                                 : std::max(gone, gather - adam_s * (1 - 1 / pbuckets));
  }
  return comm_s;
}

// The generator's buckets (search/grad_buckets.h) of the first and the last stage: the gradients'
// reduction and ZeRO's parameter gathers, bucket by bucket at each bucket's size.
double bucketed_data_parallel_s(const Scenario& sc, const LayerCosts& c, double stage_forward, double adam_s,
                                const std::vector<int>& members, CommCost& comm) {
  const StrategySpec& s = sc.strategy;
  const double micro = double(s.micro_batches());
  const int pp = s.pp;
  const double layer_backward = c.backward_s + c.recompute_s, stage_backward = double(sc.model.layers) / pp * layer_backward;
  const double grad_e = dtype_bytes(sc.grad_dtype()), param_e = dtype_bytes(sc.param_dtype());
  const CollectiveOp reduce = s.zero_stage == 0 ? CollectiveOp::kAllReduce : CollectiveOp::kReduceScatter;
  // A tied table's copy: the first and last stage's all-reduce of its gradients comes first.
  const std::vector<int> ends = {0, (pp - 1) * s.tp * s.sp};
  const double table_s = pp > 1 && sc.model.tied_embeddings
                             ? comm.collective_s(CollectiveOp::kAllReduce, ends, double(c.embedding_params) * grad_e)
                             : 0.0;
  struct Priced {
    CollectiveOp op;
    double bytes, s;
  };
  std::vector<Priced> priced;  // the few distinct bucket sizes
  auto cost = [&](CollectiveOp op, double bytes) {
    for (const Priced& q : priced)
      if (q.op == op && q.bytes == bytes) return q.s;
    priced.push_back({op, bytes, comm.collective_s(op, members, bytes)});
    return priced.back().s;
  };
  auto reduce_s = [&](const StageBucket& b) { return cost(reduce, b.elements * grad_e) + (b.deferred ? table_s : 0.0); };
  double grads = 0, gather = 0, gone = 0, pbuckets = 1;
  for (const int stage : pp == 1 ? std::vector<int>{0} : std::vector<int>{0, pp - 1}) {
    const std::vector<StageBucket> buckets = stage_buckets(sc, c, stage, layer_backward);
    if (s.zero_stage >= 2) {
      // Every micro-batch's reduce-scatter, which the shard's accumulate on the compute stream
      // waits for; a deferred bucket's once, after the backward.
      double every = 0, once = 0;
      for (const StageBucket& b : buckets) (b.deferred ? once : every) += reduce_s(b);
      grads = std::max(grads, micro * every + once);
    } else {
      // The last micro-batch's reductions past the stage's backward; the last stage's backward
      // ends (pp - 1) stage backwards before the first's (1F1B's drain).
      grads = std::max(grads, exposed_after_backward(sc, buckets, reduce_s) - stage * stage_backward);
    }
    // ZeRO 1-2 gather the last bucket last after the step (its Adam is the last), or first
    // before the forward (overlap_param_gather: the embedding's end first): its time is exposed.
    double g = 0;
    for (const StageBucket& b : buckets) g += cost(CollectiveOp::kAllGather, b.elements * param_e);
    if (g > gather) gather = g, gone = cost(CollectiveOp::kAllGather, buckets.back().elements * param_e),
                    pbuckets = double(buckets.size());
  }
  double comm_s = grads;
  if (s.zero_stage == 3)
    comm_s += micro * (std::max(0.0, gather - stage_forward) + std::max(0.0, gather - stage_backward));
  else if (s.zero_stage >= 1)
    // Without overlap_param_gather each bucket's gather follows its own Adam, under the later
    // buckets' (the optimizer's time but one bucket's).
    comm_s += sc.software.overlap_param_gather ? std::max(gone, gather - stage_forward)
                                               : std::max(gone, gather - adam_s * (1 - 1 / pbuckets));
  return comm_s;
}

}  // namespace

Estimate estimate(const Scenario& sc, const LayerCosts& c, CommCost& comm) {
  const StrategySpec& s = sc.strategy;
  const ModelSpec& m = sc.model;
  const double micro = double(s.micro_batches());
  const int pp = s.pp, dp = s.dp;
  // The gradients' group: dp ranks tp*pp*sp apart, times the sp ranks next to each with a sequence
  // axis of its own (ulysses, ring_attention: the data-and-sequence group, shared/sequence_split.h).
  const int seq = splits_sequence_axis(s) ? s.sp : 1, group = dp * seq;
  std::vector<int> members;
  for (int d = 0; d < dp; ++d)
    for (int q = 0; q < seq; ++q) members.push_back(d * s.tp * s.sp * s.pp + q);
  const double per_stage = double(m.layers) / pp;

  const double layer = c.forward_s + c.backward_s + c.recompute_s + c.tp_comm_s;
  const double first = per_stage * layer + c.first_s, last = per_stage * layer + c.last_s;
  const double middle = per_stage * layer;
  const double slowest = pp == 1 ? middle + c.first_s + c.last_s : std::max(first, last);
  const double sum = pp == 1 ? slowest : first + last + (pp - 2) * middle;

  Estimate e;
  e.compute_s = micro * (slowest - per_stage * c.tp_comm_s);
  e.recompute_s = micro * per_stage * c.recompute_s;
  double comm_s = micro * per_stage * c.tp_comm_s;
  const double pipeline = micro * slowest + (sum - slowest) / s.virtual_stages;
  double p2p = 0;
  if (pp > 1) {
    const double seq_shard = s.sp_mode == SpMode::kMegatron ? s.tp : 1;
    const double act_bytes =
        double(s.micro_batch) * m.seq_len / s.sp * m.hidden * dtype_bytes(sc.param_dtype()) / seq_shard;
    p2p = 2.0 * (pp - 1) * comm.p2p_s(0, s.tp * s.sp, act_bytes);
  }
  e.bubble_s = pipeline - micro * slowest + p2p;

  // Parameters of the largest stage on one rank.
  const double layers_params = per_stage * double(c.layer_params);
  const bool tied_copy = m.tied_embeddings && pp > 1;
  const double stage_params =
      pp == 1 ? layers_params + double(c.embedding_params + c.other_params)
              : layers_params + std::max(double(c.embedding_params),
                                         double(c.other_params) + (tied_copy ? double(c.embedding_params) : 0.0));
  const double stage_backward = per_stage * (c.backward_s + c.recompute_s);
  const double stage_forward = per_stage * c.forward_s;
  const double updated = s.zero_stage >= 1 && group > 1 ? stage_params / group : stage_params;
  e.optimizer_s = updated * (c.optimizer_s_per_element + c.optimizer_copy_s_per_element) + c.optimizer_fixed_s;
  if (c.auto_grad_down_s_per_element > 0)
    e.offload_s = (micro - 1) * std::max(0.0, updated * c.auto_grad_down_s_per_element - stage_backward);
  e.offload_s += auto_eviction_cost(sc, c.layer_stored_bytes, stage_forward, comm).exposed_s;  // search/offload_estimate.h
  if (group > 1) {
    if (uses_chunks(s))
      comm_s += chunked_data_parallel_s(sc, stage_params, stage_forward, stage_backward, e.optimizer_s - c.optimizer_fixed_s,
                                        members, comm);
    else
      comm_s += bucketed_data_parallel_s(sc, c, stage_forward, e.optimizer_s - c.optimizer_fixed_s, members, comm);
  }
  e.comm_s = comm_s;
  e.iteration_s = pipeline + p2p + (comm_s - micro * per_stage * c.tp_comm_s) + e.optimizer_s + e.offload_s;
  e.layer_stored_bytes = c.layer_stored_bytes;
  return e;
}

}  // namespace tandem::search
