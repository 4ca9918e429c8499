#include "shared/offload_report.h"

#include <string>
#include <variant>

#include "shared/chunk_layout.h"
#include "shared/param_layout.h"
#include "shared/plan_report.h"

namespace tandem {

void print_offload_text(std::ostream& os, const Schedule& s, const PlanSummary& sum) {
  const Scenario& sc = s.scenario();
  if (sc.strategy.offload == Offload::kNone) return;
  os << "\noffload     " << to_string(sc.strategy.offload) << "\n";
  if (uses_chunks(sc.strategy)) {
    const ParamLayout lay = make_param_layout(sc, 0, 0);
    // The chunks' homes on the host are the program's host parameter buffers of the chunks
    // ("B<k>.host_params", or the ZeRO-3 shard "B<k>.param_shard" placed on the host; under auto
    // the placement comes from the warm-up pass, not from the layout). Not the "B<k>.host_param"
    // that a device chunk's host Adam writes before the copy up.
    const Program p = s.program(s.rank_classes().front().representative);
    auto ends_with = [](const std::string& n, const std::string& x) {
      return n.size() >= x.size() && n.compare(n.size() - x.size(), x.size(), x) == 0;
    };
    int host = 0;
    for (const Task& t : p.tasks)
      if (const Alloc* a = std::get_if<Alloc>(&t.op)) {
        const Buffer& b = p.buffers[a->buffer];
        host += b.placement == Placement::kHost && b.role == BufferRole::kParam &&
                (ends_with(b.name, ".host_params") || ends_with(b.name, ".param_shard"));
      }
    os << "  chunks    " << lay.buckets.size() << " of " << lay.chunk_elements
       << " elements (Gemini's search), " << host << " on the host, " << lay.chunk_wasted_elements
       << " elements of padding (rank 0)\n";
    if (sc.strategy.gpu_margin_mem_ratio > 0) {
      // The chunks whose Adam m lives on the device (GeminiOptimizer._maybe_move_fp32_params).
      int device = 0;
      for (const Buffer& b : p.buffers) device += b.role == BufferRole::kOptimizer && b.placement == Placement::kDevice &&
                                                  ends_with(b.name, ".adam_m");
      os << "  margin    " << device << " chunks' optimizer states on the device (strategy.gpu_margin_mem_ratio "
         << sc.strategy.gpu_margin_mem_ratio << "), Adam there\n";
    }
  }
  for (const RankPlan& r : sum.ranks)
    os << "  rank " << r.rank << "    " << format_bytes(double(r.offload_bytes)) << " over PCIe per iteration (h2d "
       << format_bytes(double(r.offload_h2d_bytes)) << ", d2h " << format_bytes(double(r.offload_bytes - r.offload_h2d_bytes))
       << "); peak " << format_bytes(double(r.memory.peak_device_bytes)) << " device, "
       << format_bytes(double(r.memory.peak_host_bytes)) << " host\n";
  os << "  host      " << format_bytes(double(sum.host_bytes_per_node)) << " per node at most";
  if (sum.host_memory_bytes > 0) os << " of " << format_bytes(double(sum.host_memory_bytes)) << ": fits";
  os << "\n";
}

}  // namespace tandem
