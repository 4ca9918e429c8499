#include "shared/plan_report.h"

#include "shared/json_writer.h"
#include "shared/number_format.h"
#include "shared/offload_report.h"
#include "shared/rank_grid.h"

namespace tandem {
namespace {

std::string pad(std::string s, size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

}  // namespace

std::string format_bytes(double b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int u = 0;
  while (b >= 1024 && u < 4) b /= 1024, ++u;
  return format_number(u == 0 ? "%.0f " : "%.2f ", b) + units[u];
}

void print_plan_text(std::ostream& os, const Schedule& s, const PlanSummary& sum) {
  const Scenario& sc = s.scenario();
  const StrategySpec& st = sc.strategy;
  const RankGrid& g = s.grid();
  os << "scenario    " << sc.name << " (" << sc.origin << ")\n";
  os << "model       " << sc.model.name << ": " << format_number("%.3g", double(sum.parameters)) << " parameters, "
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
  os << "flops       " << format_number("%.4g", sum.flops_per_iteration) << " model, "
     << format_number("%.4g", sum.hardware_flops_per_iteration) << " with recompute, per iteration\n\n";
  os << "per rank (one line per class of identical ranks)\n";
  os << "  rank  ranks   tasks   peak memory   params     grads      optimizer  activations comm     tp/iter    dp/iter    p2p/iter   sp/layer\n";
  for (const RankPlan& r : sum.ranks) {
    const MemoryBreakdown& b = r.memory.at_peak;
    os << format_number("  %4.0f", r.rank) << format_number(" %6.0f", r.count) << format_number(" %7.0f", double(r.tasks)) << "   "
       << pad(format_bytes(double(r.memory.peak_device_bytes)), 12);
    for (BufferRole role : {BufferRole::kParam, BufferRole::kGrad, BufferRole::kOptimizer, BufferRole::kActivation,
                            BufferRole::kComm})
      os << " " << pad(format_bytes(double(b[role])), 10);
    os << " " << pad(format_bytes(double(r.collective_bytes[int(GroupKind::kTp)])), 10) << " "
       << pad(format_bytes(double(r.collective_bytes[int(GroupKind::kDp)])), 10) << " "
       << pad(format_bytes(double(r.p2p_bytes)), 10) << " " << format_bytes(r.sp_bytes_per_layer_mb) << "\n";
  }
  if (st.sp_mode != SpMode::kNone)
    os << "sp/layer    sequence-parallel bytes a rank sends per layer and micro-batch, forward and backward ("
       << to_string(st.sp_mode) << (st.sp_mode == SpMode::kMegatron ? ": the tensor group's gathers and reduce-scatters" : ": over the sp group")
       << ")\n";
  os << "\npeak memory " << format_bytes(double(sum.peak_memory_bytes)) << " on rank " << sum.peak_rank << " of "
     << format_bytes(double(sum.hbm_bytes)) << ": " << (sum.fits ? "fits" : "DOES NOT FIT") << "\n";
  if (sum.peak_host_bytes > 0) os << "host memory " << format_bytes(double(sum.peak_host_bytes)) << " per rank (offloaded state)\n";
  print_offload_text(os, s, sum);
}

void print_plan_json(std::ostream& os, const Schedule& s, const PlanSummary& sum) {
  const Scenario& sc = s.scenario();
  const RankGrid& g = s.grid();
  // Flops and the breakdown's sizes with 17 significant digits (%.17g: every double reads back
  // exactly), the other sizes and counts as integers.
  JsonWriter j(JsonWriter::Spacing::kSpaced);
  auto breakdown = [&](const MemoryBreakdown& b) {
    j.begin_object();
    j.key("params").number(double(b[BufferRole::kParam]), 17);
    j.key("grads").number(double(b[BufferRole::kGrad]), 17);
    j.key("optimizer").number(double(b[BufferRole::kOptimizer]), 17);
    j.key("activations").number(double(b[BufferRole::kActivation]), 17);
    j.key("comm").number(double(b[BufferRole::kComm]), 17);
    j.key("workspace").number(double(b[BufferRole::kWorkspace]), 17);
    j.end_object();
  };
  j.begin_object();
  j.key("scenario").string(sc.name).key("world_size").integer(g.size());
  j.key("grid").begin_object().key("dp").integer(g.dp()).key("pp").integer(g.pp());
  j.key("tp").integer(g.tp()).key("sp").integer(g.sp()).end_object();
  j.key("parameters").integer(sum.parameters);
  j.key("flops_per_iteration").number(sum.flops_per_iteration, 17);
  j.key("hardware_flops_per_iteration").number(sum.hardware_flops_per_iteration, 17);
  j.key("tokens_per_iteration").integer(sum.tokens_per_iteration);
  j.key("peak_memory_bytes").integer(sum.peak_memory_bytes).key("peak_rank").integer(sum.peak_rank);
  j.key("memory_breakdown");
  breakdown(sum.breakdown);
  j.key("peak_host_bytes").integer(sum.peak_host_bytes).key("hbm_bytes").integer(sum.hbm_bytes);
  j.key("fits").boolean(sum.fits).key("ranks").begin_array();
  for (const RankPlan& r : sum.ranks) {
    j.begin_object().key("rank").integer(r.rank).key("count").integer(r.count).key("tasks").integer(r.tasks);
    j.key("peak_memory_bytes").integer(r.memory.peak_device_bytes).key("memory_breakdown");
    breakdown(r.memory.at_peak);
    j.key("comm_bytes").begin_object();
    for (int k = 0; k < kGroupKindCount; ++k) j.key(to_string(static_cast<GroupKind>(k))).integer(r.collective_bytes[k]);
    j.key("p2p").integer(r.p2p_bytes).key("offload").integer(r.offload_bytes).key("sp").integer(r.sp_bytes).end_object();
    j.key("layers").integer(r.layers).key("sp_bytes_per_layer_micro_batch").number(r.sp_bytes_per_layer_mb, 17);
    j.end_object();
  }
  j.end_array().end_object();
  os << j.take() << "\n";
}

}  // namespace tandem
