#include "sim/sim_report.h"

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "shared/rank_grid.h"

namespace tandem::sim {

namespace {

std::string fmt(const char* f, double v) {
  char b[64];
  std::snprintf(b, sizeof b, f, v);
  return b;
}

std::string gib(int64_t bytes) { return fmt("%.2f GiB", double(bytes) / 1073741824.0); }

std::string json_string(const std::string& s) {
  std::string o = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') {
      o += '\\';
      o += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char b[8];
      std::snprintf(b, sizeof b, "\\u%04x", int(c));
      o += b;
    } else {
      o += c;
    }
  }
  return o + "\"";
}

std::string num(double v) { return fmt("%.9g", v); }

}  // namespace

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

void write_summary(std::ostream& out, const Schedule& schedule, const SimResult& r) {
  const Scenario& sc = schedule.scenario();
  const StrategySpec& st = sc.strategy;
  out << "tandem sim: " << (sc.name.empty() ? sc.origin : sc.name) << " on " << schedule.world_size() << " x "
      << sc.cluster.gpu_name << " (tp " << st.tp << ", pp " << st.pp << ", dp " << st.dp << ", sp " << st.sp
      << ", micro-batches " << st.micro_batches() << ")\n";
  if (r.oom) {
    const OomReport& o = r.oom_report;
    out << "OUT OF MEMORY: rank " << o.rank << " at t = " << fmt("%.6f", o.time_s) << " s allocating '" << o.buffer
        << "' (" << gib(o.requested_bytes) << ") with " << gib(o.in_use_bytes) << " in use of "
        << gib(o.capacity_bytes) << (o.host ? " of host memory on its node" : " of HBM") << "\n";
    out << "live buffers of rank " << o.rank << " (largest first):\n";
    const size_t shown = std::min<size_t>(o.live.size(), 20);
    for (size_t i = 0; i < shown; ++i)
      out << "  " << fmt("%10.3f MiB", double(o.live[i].bytes) / 1048576.0) << "  " << to_string(o.live[i].role)
          << "  " << o.live[i].name << "\n";
    if (o.live.size() > shown) out << "  ... " << o.live.size() - shown << " more\n";
    return;
  }
  const double t = r.iteration_time_s;
  out << "iteration time         " << fmt("%.6f", t) << " s\n";
  out << "tokens/s               " << fmt("%.1f", r.tokens_per_s) << "\n";
  out << "model TFLOP/s per GPU  " << fmt("%.1f", r.model_tflops_per_gpu) << "  (hardware, with recompute: "
      << fmt("%.1f", r.hardware_tflops_per_gpu) << ")\n";
  out << "MFU                    " << fmt("%.1f", 100 * r.mfu) << " %\n";
  const Breakdown b = breakdown_of(r, r.slowest_rank);
  auto pct = [&](double v) { return t > 0 ? fmt("%5.1f %%", 100 * v / t) : std::string("-"); };
  out << "breakdown of rank " << b.rank << " (the last to finish):\n";
  out << "  compute              " << fmt("%.6f", b.compute_s) << " s  " << pct(b.compute_s) << "\n";
  out << "  exposed comm         " << fmt("%.6f", b.exposed_comm_s) << " s  " << pct(b.exposed_comm_s) << "\n";
  out << "  pipeline bubble/wait " << fmt("%.6f", b.bubble_s) << " s  " << pct(b.bubble_s) << "\n";
  out << "  offload              " << fmt("%.6f", b.offload_s) << " s  " << pct(b.offload_s) << "\n";
  // Peak memory: per pipeline stage for generated schedules, per rank for small hand-written ones.
  const RankGrid& g = schedule.grid();
  out << "peak memory            " << gib(r.peak_memory_bytes) << " (max over ranks) of "
      << gib(sc.cluster.hbm_bytes()) << " HBM\n";
  if (g.pp() > 1) {
    for (int s = 0; s < g.pp(); ++s) {
      int64_t peak = 0;
      for (size_t i = 0; i < r.ranks.size(); ++i)
        if (g.coord(int(i)).pp == s) peak = std::max(peak, r.ranks[i].peak_device_bytes);
      out << "  stage " << s << "  " << gib(peak) << "\n";
    }
  } else if (r.ranks.size() <= 16) {
    for (size_t i = 0; i < r.ranks.size(); ++i) out << "  rank " << i << "  " << gib(r.ranks[i].peak_device_bytes) << "\n";
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
  out << "slowest rank           " << r.slowest_rank << ": ends at " << fmt("%.6f", s.end_s) << " s, busy "
      << fmt("%.6f", busy) << " s, mostly " << why << "\n";
}

void write_json(std::ostream& out, const Schedule& schedule, const SimResult& r) {
  const Scenario& sc = schedule.scenario();
  const Breakdown b = breakdown_of(r, r.slowest_rank);
  out << "{\"scenario\": " << json_string(sc.name) << ", \"world_size\": " << schedule.world_size();
  out << ", \"iteration_time_s\": " << num(r.iteration_time_s);
  out << ", \"tokens_per_s\": " << num(r.tokens_per_s);
  out << ", \"model_tflops_per_gpu\": " << num(r.model_tflops_per_gpu);
  out << ", \"hardware_tflops_per_gpu\": " << num(r.hardware_tflops_per_gpu);
  out << ", \"mfu\": " << num(r.mfu);
  out << ", \"peak_memory_bytes\": " << r.peak_memory_bytes;
  out << ", \"breakdown\": {\"rank\": " << b.rank << ", \"compute_s\": " << num(b.compute_s)
      << ", \"exposed_comm_s\": " << num(b.exposed_comm_s) << ", \"bubble_s\": " << num(b.bubble_s)
      << ", \"offload_s\": " << num(b.offload_s) << "}";
  out << ", \"slowest_rank\": " << r.slowest_rank;
  out << ", \"peak_memory_per_rank\": [";
  for (size_t i = 0; i < r.ranks.size(); ++i) out << (i ? ", " : "") << r.ranks[i].peak_device_bytes;
  out << "]";
  out << ", \"oom\": " << (r.oom ? "true" : "false");
  if (r.oom) {
    const OomReport& o = r.oom_report;
    out << ", \"oom_report\": {\"rank\": " << o.rank << ", \"time_s\": " << num(o.time_s)
        << ", \"host\": " << (o.host ? "true" : "false") << ", \"buffer\": " << json_string(o.buffer)
        << ", \"requested_bytes\": " << o.requested_bytes << ", \"in_use_bytes\": " << o.in_use_bytes
        << ", \"capacity_bytes\": " << o.capacity_bytes << ", \"live\": [";
    for (size_t i = 0; i < o.live.size(); ++i)
      out << (i ? ", " : "") << "{\"name\": " << json_string(o.live[i].name) << ", \"role\": \""
          << to_string(o.live[i].role) << "\", \"bytes\": " << o.live[i].bytes << "}";
    out << "]}";
  }
  out << ", \"simulator\": {\"flows\": " << r.flows << ", \"collectives\": " << r.collectives
      << ", \"closed_form_collectives\": " << r.closed_form_collectives
      << ", \"calibrated_collectives\": " << r.calibrated_collectives << ", \"events\": " << r.events
      << ", \"programs_generated\": " << r.programs_generated << ", \"ranks_per_replayed_state\": " << r.fold << "}}\n";
}

}  // namespace tandem::sim
