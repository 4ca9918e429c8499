#include "sim/sim_report.h"

#include <algorithm>
#include <string>
#include <vector>

#include "shared/json_writer.h"
#include "shared/number_format.h"
#include "shared/rank_grid.h"
#include "sim/prediction_interval.h"
#include "sim/prediction_interval_calibrated.h"

namespace tandem::sim {

Breakdown breakdown_of(const SimResult& r, int rank) {
  Breakdown b;
  b.rank = rank;
  if (rank < 0 || rank >= int(r.ranks.size())) return b;
  const RankStats& s = r.ranks[rank];
  b.compute_s = s.compute_s;
  b.exposed_comm_s = s.exposed_comm_s;
  b.offload_s = s.offload_s;
  b.bubble_s = std::max(0.0, r.iteration_time_s - s.compute_s - s.exposed_comm_s - s.offload_s);
  return b;
}

std::string approximation_note(const SimResult& r) {
  return "lanes of a folded state parted " + std::to_string(r.parted_meetings) +
         " times (an op whose flows are not symmetric under the replica moves, NCCL's double binary tree, met other "
         "traffic) and the run was kept: each orbit of flows moved at its representative's rate and every lane took "
         "its state's lane-0 timeline, over " + format_number("%.4g", r.parted_window_s) +
         " s of simulated time in all (the error's bound, docs/sim.md \"Approximate tier\"); without --approximate "
         "the run is repeated less folded and is exact";
}

namespace {

// What the interval line says it was made from (sim/prediction_interval_calibrated.h).
std::string interval_evidence_text(const SimResult& r) {
  if (r.interval_evidence == IntervalEvidence::kReferenceResiduals)
    return "from each cost component's residuals on the reference data, docs/sim.md";
  const bool scaled = r.scaled_to_state();  // a --state-probe prediction scaled: its own residuals
  const HostBenchResiduals& bench = HostBenchResiduals::builtin(scaled);
  std::string s = "evidence " + std::string(interval_evidence_name(r.interval_evidence)) + ": ";
  if (r.interval_spread_half_width >= 0)
    s += "the " + std::to_string(r.interval_calibration_runs) + " calibration run" +
         (r.interval_calibration_runs == 1 ? "'s" : "s'") + " spread +-" +
         format_number("%.1f", 100 * r.interval_spread_half_width) + " % and ";
  s += "the host twin bench's residuals (" + std::to_string(bench.rows) + " rows, " +
       HostBenchResiduals::builtin_file(scaled) + "), the wider per side";
  const std::string state = "state " + std::to_string(r.calibrated_state) + " of " + std::to_string(r.calibrated_states);
  if (r.state_matched)
    s += "; for the machine's state now (state probe): calibrated " + state + ", its runs' costs as measured";
  else if (r.state_communication_ratio > 0)
    s += "; costs scaled to the machine's state now (the state probe fell in no calibrated state; the nearest, " +
         state + ", scaled: communication x" + format_number("%.3f", r.state_communication_ratio) +
         ", Allocs/Frees x" + format_number("%.3f", r.state_memory_ratio) + ", kernels x" +
         format_number("%.3f", r.state_compute_ratio) + ")";
  return s;
}

}  // namespace

void write_summary(std::ostream& out, const Schedule& schedule, const SimResult& r) {
  const Scenario& sc = schedule.scenario();
  const StrategySpec& st = sc.strategy;
  out << "tandem sim: " << (sc.name.empty() ? sc.origin : sc.name) << " on " << schedule.world_size() << " x "
      << sc.cluster.gpu_name;
  // A workload without a model (an imported trace: traces/chakra/chakra_reader.h) has no batch.
  const bool tokens = st.global_batch > 0;
  if (tokens)
    out << " (tp " << st.tp << ", pp " << st.pp << ", dp " << st.dp << ", sp " << st.sp << ", micro-batches "
        << st.micro_batches() << ")\n";
  else
    out << " (an imported workload: no model, so no tokens/s or MFU)\n";
  if (r.oom) {
    const OomReport& o = r.oom_report;
    out << "OUT OF MEMORY: rank " << o.rank << " at t = " << format_number("%.6f", o.time_s) << " s allocating '" << o.buffer
        << "' (" << format_gib(o.requested_bytes) << ") with " << format_gib(o.in_use_bytes) << " in use of "
        << format_gib(o.capacity_bytes) << (o.host ? " of host memory on its node" : " of HBM") << "\n";
    out << "live buffers of rank " << o.rank << " (largest first):\n";
    const size_t shown = std::min<size_t>(o.live.size(), 20);
    for (size_t i = 0; i < shown; ++i)
      out << "  " << format_number("%10.3f MiB", double(o.live[i].bytes) / 1048576.0) << "  " << to_string(o.live[i].role)
          << "  " << o.live[i].name << "\n";
    if (o.live.size() > shown) out << "  ... " << o.live.size() - shown << " more\n";
    return;
  }
  const double t = r.iteration_time_s;
  if (r.approximate) out << "APPROXIMATE (--approximate): " << approximation_note(r) << "\n";
  out << "iteration time         " << format_number("%.6f", t) << " s" << (r.approximate ? " (approximate)" : "") << "\n";
  out << "  " << format_number("%.0f", 100 * kIntervalCoverage) << " % interval         [" << format_number("%.6f", r.iteration_time_low_s)
      << ", " << format_number("%.6f", r.iteration_time_high_s) << "] s  (" << format_number("%+.1f", 100 * (r.iteration_time_low_s / t - 1))
      << " %, " << format_number("%+.1f", 100 * (r.iteration_time_high_s / t - 1)) << " %; " << interval_evidence_text(r)
      << ")\n";
  if (tokens) {
    out << "tokens/s               " << format_number("%.1f", r.tokens_per_s) << "\n";
    out << "model TFLOP/s per GPU  " << format_number("%.1f", r.model_tflops_per_gpu) << "  (hardware, with recompute: "
        << format_number("%.1f", r.hardware_tflops_per_gpu) << ")\n";
    out << "MFU                    " << format_number("%.1f", 100 * r.mfu) << " %\n";
  }
  const Breakdown b = breakdown_of(r, r.slowest_rank);
  auto pct = [&](double v) { return t > 0 ? format_number("%5.1f %%", 100 * v / t) : std::string("-"); };
  out << "breakdown of rank " << b.rank << " (the last to finish):\n";
  out << "  compute              " << format_number("%.6f", b.compute_s) << " s  " << pct(b.compute_s) << "\n";
  out << "  exposed comm         " << format_number("%.6f", b.exposed_comm_s) << " s  " << pct(b.exposed_comm_s) << "\n";
  out << "  pipeline bubble/wait " << format_number("%.6f", b.bubble_s) << " s  " << pct(b.bubble_s) << "\n";
  out << "  offload              " << format_number("%.6f", b.offload_s) << " s  " << pct(b.offload_s) << "\n";
  // Peak memory: per pipeline stage for generated schedules, per rank for small hand-written ones.
  const RankGrid& g = schedule.grid();
  out << "peak memory            " << format_gib(r.peak_memory_bytes) << " (max over ranks) of "
      << format_gib(sc.cluster.hbm_bytes()) << " HBM\n";
  if (g.pp() > 1) {
    for (int s = 0; s < g.pp(); ++s) {
      int64_t peak = 0;
      for (size_t i = 0; i < r.ranks.size(); ++i)
        if (g.coord(int(i)).pp == s) peak = std::max(peak, r.ranks[i].peak_device_bytes);
      out << "  stage " << s << "  " << format_gib(peak) << "\n";
    }
  } else if (r.ranks.size() <= 16) {
    for (size_t i = 0; i < r.ranks.size(); ++i) out << "  rank " << i << "  " << format_gib(r.ranks[i].peak_device_bytes) << "\n";
  }
  const RankStats& s = r.ranks.empty() ? RankStats{} : r.ranks[r.slowest_rank];
  std::string why;
  const double busy = s.compute_s + s.exposed_comm_s + s.offload_s;
  if (s.exposed_comm_s >= std::max(s.compute_s * 0.25, s.offload_s) && s.exposed_comm_s > s.idle_s)
    why = "communication it cannot hide behind compute";
  else if (s.idle_s > 0.25 * t)
    why = "waiting: pipeline bubble and slower peers";
  else if (s.offload_s > 0.1 * t)
    why = "host offload traffic";
  else
    why = "compute-bound";
  out << "slowest rank           " << r.slowest_rank << ": ends at " << format_number("%.6f", s.end_s) << " s, busy "
      << format_number("%.6f", busy) << " s, mostly " << why << "\n";
}

void write_json(std::ostream& out, const Schedule& schedule, const SimResult& r) {
  const Scenario& sc = schedule.scenario();
  const Breakdown b = breakdown_of(r, r.slowest_rank);
  // Times and rates with 9 significant digits (%.9g), sizes and counts as integers.
  JsonWriter j(JsonWriter::Spacing::kSpaced);
  auto num = [&](const char* key, double v) { j.key(key).number(v, 9); };
  j.begin_object();
  j.key("scenario").string(sc.name).key("world_size").integer(schedule.world_size());
  num("iteration_time_s", r.iteration_time_s);
  // Present only when the result is approximate: an exact result's JSON is the same with or
  // without --approximate.
  if (r.approximate) {
    j.key("approximate").begin_object().key("what").string(approximation_note(r));
    j.key("partings").integer(r.parted_meetings);
    num("parted_window_s", r.parted_window_s);
    j.end_object();
  }
  j.key("iteration_time_interval_s").begin_array();
  j.number(r.iteration_time_low_s, 9).number(r.iteration_time_high_s, 9);
  j.end_array();
  num("tokens_per_s", r.tokens_per_s);
  num("model_tflops_per_gpu", r.model_tflops_per_gpu);
  num("hardware_tflops_per_gpu", r.hardware_tflops_per_gpu);
  num("mfu", r.mfu);
  j.key("peak_memory_bytes").integer(r.peak_memory_bytes);
  j.key("breakdown").begin_object().key("rank").integer(b.rank);
  num("compute_s", b.compute_s);
  num("exposed_comm_s", b.exposed_comm_s);
  num("bubble_s", b.bubble_s);
  num("offload_s", b.offload_s);
  j.end_object();
  j.key("slowest_rank").integer(r.slowest_rank);
  // What the interval was made of: its coverage and the slowest rank's busy time by component.
  j.key("prediction_interval").begin_object();
  num("coverage", kIntervalCoverage);
  // A host calibration's interval (sim/prediction_interval_calibrated.h) says what it was made
  // from; the default (the GPU reference residuals) has no such key, as before.
  if (r.interval_evidence != IntervalEvidence::kReferenceResiduals) {
    j.key("evidence").string(interval_evidence_name(r.interval_evidence));
    j.key("calibration_runs").integer(r.interval_calibration_runs);
    if (r.interval_spread_half_width >= 0) num("calibration_spread_half_width", r.interval_spread_half_width);
    const HostBenchResiduals& bench = HostBenchResiduals::builtin(r.scaled_to_state());
    j.key("host_bench_residuals").begin_object().key("rows").integer(bench.rows);
    num("q10", bench.q10);
    num("q50", bench.q50);
    num("q90", bench.q90);
    j.end_object();
    if (r.state_communication_ratio > 0) {
      j.key("state_probe").begin_object();
      num("communication_ratio", r.state_communication_ratio);
      num("memory_ratio", r.state_memory_ratio);
      num("compute_ratio", r.state_compute_ratio);
      j.key("calibrated_state").integer(r.calibrated_state);
      j.key("calibrated_states").integer(r.calibrated_states);
      j.key("matched").boolean(r.state_matched);
      j.end_object();
    }
  }
  j.key("busy_s").begin_object();
  const RankStats none{};
  const RankStats& slow = r.ranks.empty() ? none : r.ranks[r.slowest_rank];
  for (int c = 0; c < kComponentCount; ++c) num(component_name(Component(c)), slow.component_s[size_t(c)]);
  j.end_object().end_object();
  j.key("peak_memory_per_rank").begin_array();
  for (const RankStats& rs : r.ranks) j.integer(rs.peak_device_bytes);
  j.end_array();
  j.key("oom").boolean(r.oom);
  if (r.oom) {
    const OomReport& o = r.oom_report;
    j.key("oom_report").begin_object().key("rank").integer(o.rank);
    num("time_s", o.time_s);
    j.key("host").boolean(o.host).key("buffer").string(o.buffer);
    j.key("requested_bytes").integer(o.requested_bytes).key("in_use_bytes").integer(o.in_use_bytes);
    j.key("capacity_bytes").integer(o.capacity_bytes).key("live").begin_array();
    for (const auto& l : o.live)
      j.begin_object().key("name").string(l.name).key("role").string(to_string(l.role)).key("bytes").integer(l.bytes).end_object();
    j.end_array().end_object();
  }
  j.key("simulator").begin_object();
  j.key("flows").integer(r.flows).key("simgrid_flows").integer(r.simgrid_flows).key("collectives").integer(r.collectives);
  j.key("closed_form_collectives").integer(r.closed_form_collectives);
  j.key("calibrated_collectives").integer(r.calibrated_collectives).key("events").integer(r.events);
  j.key("programs_generated").integer(r.programs_generated).key("ranks_per_replayed_state").integer(r.fold);
  j.end_object().end_object();
  out << j.take() << "\n";
}

}  // namespace tandem::sim
