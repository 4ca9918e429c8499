#include "shared/plan_report.h"

#include <cstdio>

#include "shared/rank_grid.h"

namespace tandem {
namespace {

std::string fmt(const char* f, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, f, v);
  return buf;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\', out += c;
    else if (static_cast<unsigned char>(c) < 0x20) out += fmt("\\u%04x", static_cast<unsigned char>(c));
    else out += c;
  }
  return out + "\"";
}

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

std::string num(double v) { return fmt("%.17g", v); }

}  // namespace

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return fmt(u == 0 ? "%.0f " : "%.2f ", b) + units[u];
}

void print_plan_text(std::ostream& os, const Schedule& s, const PlanSummary& sum) {
  const Scenario& sc = s.scenario();
  const StrategySpec& st = sc.strategy;
  const RankGrid& g = s.grid();
  os << "scenario    " << sc.name << " (" << sc.origin << ")\n";
  os << "model       " << sc.model.name << ": " << fmt("%.3g", double(sum.parameters)) << " parameters, "
     << sc.model.layers << " layers, hidden " << sc.model.hidden << ", seq " << sc.model.seq_len << "\n";
  os << "cluster     " << sc.cluster.gpus << " x " << sc.cluster.gpu_name << " (" << sc.cluster.nodes()
     << " nodes of " << sc.cluster.gpus_per_node << "), " << format_bytes(double(sum.hbm_bytes)) << " HBM each\n";
  os << "strategy    dp " << g.dp() << " x pp " << g.pp() << " x tp " << g.tp() << " x sp " << g.sp() << " = "
     << g.size() << " ranks; tp " << to_string(st.tp_mode) << ", pp " << to_string(st.pp_schedule);
  if (st.virtual_stages > 1) os << " (v=" << st.virtual_stages << ")";
  os << ", sp " << to_string(st.sp_mode) << ", zero " << st.zero_stage << ", recompute " << to_string(st.recompute)
     << ", offload " << to_string(st.offload) << ", " << to_string(st.dtype) << "\n";
  os << "rank order  rank = ((dp*PP + pp)*TP + tp)*SP + sp  (sequence fastest, data slowest)\n";
  std::array<int, kGroupKindCount> groups{};
  for (const ProcessGroup& pg : s.groups()) groups[static_cast<int>(pg.kind)]++;
  os << "groups     ";
  for (int k = 0; k < kGroupKindCount; ++k)
    if (groups[k]) os << " " << groups[k] << " " << to_string(static_cast<GroupKind>(k));
  os << "\n";
  os << "batch       global " << st.global_batch << ", micro " << st.micro_batch << ", " << st.micro_batches()
     << " micro-batches per pipeline, " << sum.tokens_per_iteration << " tokens per iteration\n";
  os << "flops       " << fmt("%.4g", sum.flops_per_iteration) << " model, "
     << fmt("%.4g", sum.hardware_flops_per_iteration) << " with recompute, per iteration\n\n";
  os << "per rank (one line per class of identical ranks)\n";
  os << "  rank  ranks   tasks   peak memory   params     grads      optimizer  activations comm     tp/iter    dp/iter    p2p/iter\n";
  for (const RankPlan& r : sum.ranks) {
    const MemoryBreakdown& b = r.memory.at_peak;
    os << fmt("  %4.0f", r.rank) << fmt(" %6.0f", r.count) << fmt(" %7.0f", double(r.tasks)) << "   "
       << pad(format_bytes(double(r.memory.peak_device_bytes)), 12);
    for (BufferRole role : {BufferRole::kParam, BufferRole::kGrad, BufferRole::kOptimizer, BufferRole::kActivation,
                            BufferRole::kComm})
      os << " " << pad(format_bytes(double(b[role])), 10);
    os << " " << pad(format_bytes(double(r.collective_bytes[int(GroupKind::kTp)])), 10) << " "
       << pad(format_bytes(double(r.collective_bytes[int(GroupKind::kDp)])), 10) << " "
       << format_bytes(double(r.p2p_bytes)) << "\n";
  }
  os << "\npeak memory " << format_bytes(double(sum.peak_memory_bytes)) << " on rank " << sum.peak_rank << " of "
     << format_bytes(double(sum.hbm_bytes)) << ": " << (sum.fits ? "fits" : "DOES NOT FIT") << "\n";
  if (sum.peak_host_bytes > 0) os << "host memory " << format_bytes(double(sum.peak_host_bytes)) << " per rank (offloaded state)\n";
}

void print_plan_json(std::ostream& os, const Schedule& s, const PlanSummary& sum) {
  const Scenario& sc = s.scenario();
  const RankGrid& g = s.grid();
  auto breakdown = [&](const MemoryBreakdown& b) {
    std::string o = "{\"params\": " + num(double(b[BufferRole::kParam])) +
                    ", \"grads\": " + num(double(b[BufferRole::kGrad])) +
                    ", \"optimizer\": " + num(double(b[BufferRole::kOptimizer])) +
                    ", \"activations\": " + num(double(b[BufferRole::kActivation])) +
                    ", \"comm\": " + num(double(b[BufferRole::kComm])) +
                    ", \"workspace\": " + num(double(b[BufferRole::kWorkspace])) + "}";
    return o;
  };
  os << "{\"scenario\": " << json_string(sc.name) << ", \"world_size\": " << g.size() << ", \"grid\": {\"dp\": "
     << g.dp() << ", \"pp\": " << g.pp() << ", \"tp\": " << g.tp() << ", \"sp\": " << g.sp() << "}"
     << ", \"parameters\": " << sum.parameters << ", \"flops_per_iteration\": " << num(sum.flops_per_iteration)
     << ", \"hardware_flops_per_iteration\": " << num(sum.hardware_flops_per_iteration)
     << ", \"tokens_per_iteration\": " << sum.tokens_per_iteration
     << ", \"peak_memory_bytes\": " << sum.peak_memory_bytes << ", \"peak_rank\": " << sum.peak_rank
     << ", \"memory_breakdown\": " << breakdown(sum.breakdown) << ", \"peak_host_bytes\": " << sum.peak_host_bytes
     << ", \"hbm_bytes\": " << sum.hbm_bytes << ", \"fits\": " << (sum.fits ? "true" : "false") << ", \"ranks\": [";
  for (size_t i = 0; i < sum.ranks.size(); ++i) {
    const RankPlan& r = sum.ranks[i];
    os << (i ? ", " : "") << "{\"rank\": " << r.rank << ", \"count\": " << r.count << ", \"tasks\": " << r.tasks
       << ", \"peak_memory_bytes\": " << r.memory.peak_device_bytes
       << ", \"memory_breakdown\": " << breakdown(r.memory.at_peak) << ", \"comm_bytes\": {";
    bool first = true;
    for (int k = 0; k < kGroupKindCount; ++k) {
      os << (first ? "" : ", ") << "\"" << to_string(static_cast<GroupKind>(k)) << "\": " << r.collective_bytes[k];
      first = false;
    }
    os << ", \"p2p\": " << r.p2p_bytes << ", \"offload\": " << r.offload_bytes << "}}";
  }
  os << "]}\n";
}

}  // namespace tandem
