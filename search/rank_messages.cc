#include "search/rank_messages.h"

namespace tandem::search {

void to_proto(const Candidate& c, proto::SearchCandidate* out) {
  out->set_dp(c.dp), out->set_tp(c.tp), out->set_pp(c.pp), out->set_sp(c.sp);
  out->set_virtual_stages(c.virtual_stages), out->set_micro_batch(c.micro_batch);
  out->set_tp_depth(c.tp_depth), out->set_global_batch(c.global_batch);
  out->set_tp_mode(c.tp_mode), out->set_sp_mode(c.sp_mode), out->set_schedule(c.schedule);
  out->set_zero(c.zero), out->set_recompute(c.recompute), out->set_offload(c.offload);
  out->set_offload_fraction(c.offload_fraction);
  for (int8_t s : c.switches) out->add_switches(s);
}

Candidate from_proto(const proto::SearchCandidate& p) {
  if (p.switches_size() != kSwitchCount)
    throw Error("search: internal: a rank's point has " + std::to_string(p.switches_size()) + " switches", ErrorKind::kInternal);
  Candidate c;
  c.dp = p.dp(), c.tp = p.tp(), c.pp = p.pp(), c.sp = p.sp();
  c.virtual_stages = p.virtual_stages(), c.micro_batch = p.micro_batch();
  c.tp_depth = p.tp_depth(), c.global_batch = p.global_batch();
  c.tp_mode = int8_t(p.tp_mode()), c.sp_mode = int8_t(p.sp_mode()), c.schedule = int8_t(p.schedule());
  c.zero = int8_t(p.zero()), c.recompute = int8_t(p.recompute()), c.offload = int8_t(p.offload());
  c.offload_fraction = p.offload_fraction();
  for (int i = 0; i < kSwitchCount; ++i) c.switches[i] = int8_t(p.switches(i));
  return c;
}

void to_proto(const Estimate& e, proto::SearchEstimate* out) {
  out->set_iteration_s(e.iteration_s), out->set_compute_s(e.compute_s), out->set_recompute_s(e.recompute_s);
  out->set_bubble_s(e.bubble_s), out->set_comm_s(e.comm_s), out->set_optimizer_s(e.optimizer_s);
  out->set_layer_stored_bytes(e.layer_stored_bytes);
}

Estimate from_proto(const proto::SearchEstimate& p) {
  Estimate e;
  e.iteration_s = p.iteration_s(), e.compute_s = p.compute_s(), e.recompute_s = p.recompute_s();
  e.bubble_s = p.bubble_s(), e.comm_s = p.comm_s(), e.optimizer_s = p.optimizer_s();
  e.layer_stored_bytes = p.layer_stored_bytes();
  return e;
}

}  // namespace tandem::search
