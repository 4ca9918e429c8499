#include "shared/plan_summary.h"

#include <algorithm>
#include <map>
#include <set>
#include <variant>

#include "shared/error.h"
#include "shared/pipeline_memory.h"
#include "shared/resource_limit.h"
#include "shared/rank_grid.h"

namespace tandem {
namespace {

// Everything but the memory, from the representative's program.
RankPlan plan_rank(const Schedule& s, const RankClass& rc, const Program& p) {
  RankPlan r;
  r.rank = rc.representative;
  r.count = rc.count;
  r.tasks = p.tasks.size();
  const SpMode mode = s.scenario().strategy.sp_mode;
  const RankCoord me = s.grid().coord(p.rank);
  // A message to a rank differing from this one on the sequence axis only (the tensor axis only,
  // under Megatron-SP): sequence-parallel traffic. Pipeline messages differ on the pp axis.
  auto sp_peer = [&](int peer) {
    const RankCoord o = s.grid().coord(peer);
    if (o.dp != me.dp || o.pp != me.pp) return false;
    return mode == SpMode::kMegatron ? o.sp == me.sp && o.tp != me.tp : o.tp == me.tp && o.sp != me.sp;
  };
  std::set<int> layers;
  for (const Task& t : p.tasks) {
    if (const Compute* c = std::get_if<Compute>(&t.op)) {
      const double f = c->matmul_flops();
      if (c->phase == Phase::kForward || c->phase == Phase::kBackward) r.model_flops += f;
      r.hardware_flops += f;
      if (c->layer >= 0) layers.insert(c->layer);
    } else if (const Collective* c = std::get_if<Collective>(&t.op)) {
      const GroupKind kind = s.group(c->group).kind;
      int64_t& sum = r.collective_bytes[static_cast<int>(kind)];
      sum = checked_add(sum, c->bytes, "a rank's collective bytes");
      const bool megatron_sp = mode == SpMode::kMegatron && kind == GroupKind::kTp && c->layer >= 0 &&
                               (c->op == CollectiveOp::kAllGather || c->op == CollectiveOp::kReduceScatter);
      if (kind == GroupKind::kSp || megatron_sp) r.sp_bytes = checked_add(r.sp_bytes, c->bytes, "a rank's sp bytes");
    } else if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) {
      if (m->is_send) r.p2p_bytes = checked_add(r.p2p_bytes, m->bytes, "a rank's sent bytes");
      if (m->is_send && mode != SpMode::kNone && sp_peer(m->peer))
        r.sp_bytes = checked_add(r.sp_bytes, m->bytes, "a rank's sp bytes");
    } else if (const Copy* c = std::get_if<Copy>(&t.op)) {
      r.offload_bytes = checked_add(r.offload_bytes, c->bytes, "a rank's copied bytes");
      if (c->direction == CopyDirection::kH2D) r.offload_h2d_bytes += c->bytes;
    }
  }
  r.layers = int(layers.size());
  const int mbs = s.scenario().strategy.micro_batches();
  if (r.layers > 0 && mbs > 0) r.sp_bytes_per_layer_mb = double(r.sp_bytes) / (double(r.layers) * mbs);
  return r;
}

// One RankPlan per class. Without a pipeline each representative's program is walked in program
// order; with one, the pipeline of each representative not yet covered is walked whole
// (shared/pipeline_memory.h), which generates every program of it once and gives the profiles
// of the representatives in it.
std::vector<RankPlan> plan_ranks(const Schedule& s) {
  const std::vector<RankClass> classes = s.rank_classes();
  std::vector<RankPlan> plans(classes.size());
  if (s.grid().pp() == 1) {
    for (size_t i = 0; i < classes.size(); ++i) {
      const Program p = s.program(classes[i].representative);
      plans[i] = plan_rank(s, classes[i], p);
      plans[i].memory = memory_profile(p);
    }
    return plans;
  }
  std::map<int, size_t> class_of;  // representative -> class index
  for (size_t i = 0; i < classes.size(); ++i) class_of[classes[i].representative] = i;
  std::vector<char> done(classes.size(), 0);
  for (size_t i = 0; i < classes.size(); ++i) {
    if (done[i]) continue;
    const std::vector<int> ranks = pipeline_ranks(s, classes[i].representative);
    const std::vector<MemoryProfile> profiles =
        pipeline_memory_profiles(s, classes[i].representative, [&](const Program& p) {
          auto it = class_of.find(p.rank);
          if (it != class_of.end() && !done[it->second]) plans[it->second] = plan_rank(s, classes[it->second], p);
        });
    for (size_t stage = 0; stage < ranks.size(); ++stage) {
      auto it = class_of.find(ranks[stage]);
      if (it == class_of.end() || done[it->second]) continue;
      plans[it->second].memory = profiles[stage];
      done[it->second] = 1;
    }
  }
  return plans;
}

}  // namespace

PlanSummary summarize(const Schedule& s) {
  const Scenario& sc = s.scenario();
  PlanSummary sum;
  sum.parameters = sc.model.parameters();
  sum.tokens_per_iteration = checked_mul(sc.strategy.global_batch, sc.model.seq_len, "tokens per iteration");
  sum.hbm_bytes = sc.cluster.hbm_bytes();
  for (RankPlan& r : plan_ranks(s)) {
    sum.flops_per_iteration += r.model_flops * r.count;
    sum.hardware_flops_per_iteration += r.hardware_flops * r.count;
    if (r.memory.peak_device_bytes > sum.peak_memory_bytes) {
      sum.peak_memory_bytes = r.memory.peak_device_bytes;
      sum.breakdown = r.memory.at_peak;
      sum.peak_rank = r.rank;
    }
    if (r.memory.peak_host_bytes > sum.peak_host_bytes) sum.peak_host_bytes = r.memory.peak_host_bytes;
    sum.ranks.push_back(std::move(r));
  }
  sum.fits = sum.peak_memory_bytes <= sum.hbm_bytes;
  const int per_node = std::min(sc.cluster.gpus, sc.cluster.gpus_per_node);
  sum.host_bytes_per_node = checked_mul(sum.peak_host_bytes, int64_t{per_node}, "host bytes per node");
  sum.host_memory_bytes = static_cast<int64_t>(sc.cluster.host_memory_gib * 1073741824.0);
  return sum;
}

void check_host_memory(const Scenario& sc, const PlanSummary& sum) {
  if (sum.host_memory_bytes <= 0 || sum.host_bytes_per_node <= sum.host_memory_bytes) return;
  const int per_node = std::min(sc.cluster.gpus, sc.cluster.gpus_per_node);
  throw Error(sc.origin + ": cluster.host_memory_gib: the offloaded state needs " +
                  std::to_string(sum.host_bytes_per_node) + " bytes of host memory per node (" +
                  std::to_string(sum.peak_host_bytes) + " bytes at the peak of a rank x " + std::to_string(per_node) +
                  " GPUs per node), more than the node's " + std::to_string(sum.host_memory_bytes) + " bytes (" +
                  std::to_string(sc.cluster.host_memory_gib) + " GiB)",
              ErrorKind::kOutOfMemory);
}

}  // namespace tandem
