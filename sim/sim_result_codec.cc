#include "sim/sim_result_codec.h"

#include "shared/error.h"
#include "sim_result.pb.h"

namespace tandem::sim {

std::string encode_sim_result(const SimResult& r) {
  proto::SimResult p;
  p.set_iteration_time_s(r.iteration_time_s);
  p.set_oom(r.oom);
  if (r.oom) {
    const OomReport& o = r.oom_report;
    proto::SimOomReport* po = p.mutable_oom_report();
    po->set_rank(o.rank);
    po->set_time_s(o.time_s);
    po->set_host(o.host);
    po->set_buffer(o.buffer);
    po->set_requested_bytes(o.requested_bytes);
    po->set_in_use_bytes(o.in_use_bytes);
    po->set_capacity_bytes(o.capacity_bytes);
    for (const LiveBuffer& b : o.live) {
      proto::SimLiveBuffer* pb = po->add_live();
      pb->set_name(b.name);
      pb->set_role(uint32_t(b.role));
      pb->set_bytes(b.bytes);
    }
  }
  p.mutable_ranks()->Reserve(int(r.ranks.size()));
  for (const RankStats& s : r.ranks) {
    proto::SimRankStats* ps = p.add_ranks();
    ps->set_end_s(s.end_s);
    ps->set_compute_s(s.compute_s);
    ps->set_exposed_comm_s(s.exposed_comm_s);
    ps->set_offload_s(s.offload_s);
    ps->set_idle_s(s.idle_s);
    ps->set_peak_device_bytes(s.peak_device_bytes);
    ps->set_peak_host_bytes(s.peak_host_bytes);
    ps->set_model_flops(s.model_flops);
    ps->set_hardware_flops(s.hardware_flops);
    for (double c : s.component_s) ps->add_component_s(c);
  }
  proto::SimTaskTimings* pt = p.mutable_tasks();
  for (const TaskTiming& t : r.tasks) {
    pt->add_rank(t.rank);
    pt->add_task(t.task);
    pt->add_stream(uint32_t(t.stream));
    pt->add_start_s(t.start_s);
    pt->add_end_s(t.end_s);
  }
  proto::SimMemorySamples* pm = p.mutable_memory();
  for (const MemorySample& m : r.memory) {
    pm->add_rank(m.rank);
    pm->add_time_s(m.time_s);
    pm->add_device_bytes(m.device_bytes);
    pm->add_host_bytes(m.host_bytes);
  }
  p.set_tokens_per_s(r.tokens_per_s);
  p.set_model_tflops_per_gpu(r.model_tflops_per_gpu);
  p.set_hardware_tflops_per_gpu(r.hardware_tflops_per_gpu);
  p.set_mfu(r.mfu);
  p.set_peak_memory_bytes(r.peak_memory_bytes);
  p.set_slowest_rank(r.slowest_rank);
  p.set_flows(r.flows);
  p.set_simgrid_flows(r.simgrid_flows);
  p.set_collectives(r.collectives);
  p.set_closed_form_collectives(r.closed_form_collectives);
  p.set_calibrated_collectives(r.calibrated_collectives);
  p.set_events(r.events);
  p.set_programs_generated(r.programs_generated);
  p.set_fold(r.fold);
  p.set_fold_exact(r.fold_exact);
  p.set_lane_quotient_parted(r.lane_quotient_parted);
  p.set_approximate(r.approximate);
  p.set_parted_meetings(r.parted_meetings);
  p.set_parted_window_s(r.parted_window_s);
  p.set_fold_broken(r.fold_broken);
  p.set_iteration_time_low_s(r.iteration_time_low_s);
  p.set_iteration_time_high_s(r.iteration_time_high_s);
  p.set_interval_evidence(uint32_t(r.interval_evidence));
  p.set_interval_spread_half_width(r.interval_spread_half_width);
  p.set_interval_calibration_runs(r.interval_calibration_runs);
  p.set_state_communication_ratio(r.state_communication_ratio);
  p.set_state_memory_ratio(r.state_memory_ratio);
  p.set_state_compute_ratio(r.state_compute_ratio);
  p.set_calibrated_state(r.calibrated_state);
  p.set_calibrated_states(r.calibrated_states);
  p.set_state_matched(r.state_matched);
  return p.SerializeAsString();
}

SimResult decode_sim_result(const std::string& bytes) {
  proto::SimResult p;
  if (!p.ParseFromString(bytes)) throw Error("sim: corrupt result from the simulation process", ErrorKind::kInternal);
  SimResult r;
  r.iteration_time_s = p.iteration_time_s();
  r.oom = p.oom();
  if (r.oom) {
    const proto::SimOomReport& po = p.oom_report();
    OomReport& o = r.oom_report;
    o.rank = po.rank();
    o.time_s = po.time_s();
    o.host = po.host();
    o.buffer = po.buffer();
    o.requested_bytes = po.requested_bytes();
    o.in_use_bytes = po.in_use_bytes();
    o.capacity_bytes = po.capacity_bytes();
    for (const proto::SimLiveBuffer& b : po.live()) o.live.push_back({b.name(), BufferRole(b.role()), b.bytes()});
  }
  r.ranks.reserve(size_t(p.ranks_size()));
  for (const proto::SimRankStats& s : p.ranks()) {
    r.ranks.push_back({s.end_s(), s.compute_s(), s.exposed_comm_s(), s.offload_s(), s.idle_s(), s.peak_device_bytes(),
                       s.peak_host_bytes(), s.model_flops(), s.hardware_flops(), {}});
    if (s.component_s_size() != kComponentCount)
      throw Error("sim: " + std::to_string(s.component_s_size()) + " cost components from the simulation process, " +
                      std::to_string(kComponentCount) + " expected",
                  ErrorKind::kInternal);
    for (int c = 0; c < kComponentCount; ++c) r.ranks.back().component_s[size_t(c)] = s.component_s(c);
  }
  const proto::SimTaskTimings& pt = p.tasks();
  const int nt = pt.rank_size();
  if (pt.task_size() != nt || pt.stream_size() != nt || pt.start_s_size() != nt || pt.end_s_size() != nt)
    throw Error("sim: task columns of unequal length from the simulation process", ErrorKind::kInternal);
  r.tasks.resize(size_t(nt));
  for (int i = 0; i < nt; ++i)
    r.tasks[size_t(i)] = {pt.rank(i), pt.task(i), Stream(pt.stream(i)), pt.start_s(i), pt.end_s(i)};
  const proto::SimMemorySamples& pm = p.memory();
  const int nm = pm.rank_size();
  if (pm.time_s_size() != nm || pm.device_bytes_size() != nm || pm.host_bytes_size() != nm)
    throw Error("sim: memory columns of unequal length from the simulation process", ErrorKind::kInternal);
  r.memory.resize(size_t(nm));
  for (int i = 0; i < nm; ++i) r.memory[size_t(i)] = {pm.rank(i), pm.time_s(i), pm.device_bytes(i), pm.host_bytes(i)};
  r.tokens_per_s = p.tokens_per_s();
  r.model_tflops_per_gpu = p.model_tflops_per_gpu();
  r.hardware_tflops_per_gpu = p.hardware_tflops_per_gpu();
  r.mfu = p.mfu();
  r.peak_memory_bytes = p.peak_memory_bytes();
  r.slowest_rank = p.slowest_rank();
  r.flows = p.flows();
  r.simgrid_flows = p.simgrid_flows();
  r.collectives = p.collectives();
  r.closed_form_collectives = p.closed_form_collectives();
  r.calibrated_collectives = p.calibrated_collectives();
  r.events = p.events();
  r.programs_generated = p.programs_generated();
  r.fold = p.fold();
  r.fold_exact = p.fold_exact();
  r.lane_quotient_parted = p.lane_quotient_parted();
  r.approximate = p.approximate();
  r.parted_meetings = p.parted_meetings();
  r.parted_window_s = p.parted_window_s();
  r.fold_broken = p.fold_broken();
  r.iteration_time_low_s = p.iteration_time_low_s();
  r.iteration_time_high_s = p.iteration_time_high_s();
  if (p.interval_evidence() > uint32_t(IntervalEvidence::kCalibrationSpreadAndHostBench))
    throw Error("sim: a result with interval evidence " + std::to_string(p.interval_evidence()) + " out of range",
                ErrorKind::kInternal);
  r.interval_evidence = IntervalEvidence(p.interval_evidence());
  r.interval_spread_half_width = p.interval_spread_half_width();
  r.interval_calibration_runs = p.interval_calibration_runs();
  r.state_communication_ratio = p.state_communication_ratio();
  r.state_memory_ratio = p.state_memory_ratio();
  r.state_compute_ratio = p.state_compute_ratio();
  r.calibrated_state = p.calibrated_state();
  r.calibrated_states = p.calibrated_states();
  r.state_matched = p.state_matched();
  return r;
}

}  // namespace tandem::sim
