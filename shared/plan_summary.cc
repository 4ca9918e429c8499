#include "shared/plan_summary.h"

#include <variant>

namespace tandem {
namespace {

RankPlan plan_rank(const Schedule& s, const RankClass& rc) {
  RankPlan r;
  r.rank = rc.representative;
  r.count = rc.count;
  Program p = s.program(rc.representative);
  r.tasks = p.tasks.size();
  r.memory = memory_profile(p);
  for (const Task& t : p.tasks) {
    if (const Compute* c = std::get_if<Compute>(&t.op)) {
      const double f = c->matmul_flops();
      if (c->phase == Phase::kForward || c->phase == Phase::kBackward) r.model_flops += f;
      r.hardware_flops += f;
    } else if (const Collective* c = std::get_if<Collective>(&t.op)) {
      r.collective_bytes[static_cast<int>(s.group(c->group).kind)] += c->bytes;
    } else if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) {
      if (m->is_send) r.p2p_bytes += m->bytes;
    } else if (const Copy* c = std::get_if<Copy>(&t.op)) {
      r.offload_bytes += c->bytes;
    }
  }
  return r;
}

}  // namespace

PlanSummary summarize(const Schedule& s) {
  const Scenario& sc = s.scenario();
  PlanSummary sum;
  sum.parameters = sc.model.parameters();
  sum.tokens_per_iteration = int64_t(sc.strategy.global_batch) * sc.model.seq_len;
  sum.hbm_bytes = sc.cluster.hbm_bytes();
  for (const RankClass& rc : s.rank_classes()) {
    RankPlan r = plan_rank(s, rc);
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
  return sum;
}

}  // namespace tandem
