#include "shared/auto_placement.h"

#include <algorithm>

#include "shared/error.h"
#include "shared/memory_timeline.h"

namespace tandem {
namespace {

std::string describe(const Scenario& sc, const AutoRecord& r, int op) {
  const int u = r.op_unit.at(op);
  if (u < 0) return "operator " + std::to_string(op) + " (the optimizer step)";
  (void)sc;
  return "operator " + std::to_string(op) + " (the " + (r.op_forward.at(op) ? "forward" : "backward") +
         " of parameter unit " + std::to_string(u) + ")";
}

// Step 1 of shared/auto_placement.h: per operator, the most device bytes other than chunk
// parameters over its period.
std::vector<int64_t> non_model_per_operator(const Program& p, const AutoRecord& warm) {
  const size_t n = warm.op_start.size();
  std::vector<int64_t> period(n, 0);
  size_t op = 0;
  walk_memory(p, [&](const Task& t, const MemoryBreakdown& b, int64_t) {
    while (op + 1 < n && t.id >= warm.op_start[op + 1]) ++op;
    if (n > 0) period[op] = std::max(period[op], b.total() - b[BufferRole::kParam]);
  });
  return period;
}

}  // namespace

std::vector<bool> margin_chunks(const std::vector<int64_t>& fp32_shard_bytes, double budget_bytes) {
  std::vector<bool> device(fp32_shard_bytes.size(), false);
  double used = 0;
  for (size_t c = 0; c < fp32_shard_bytes.size(); ++c) {
    const int64_t b = fp32_shard_bytes[c];
    if (b <= 0) continue;
    if (used + double(b) < budget_bytes) device[c] = true, used += double(b);  // gemini_optimizer.py:328
  }
  return device;
}

namespace {

// Steps 1-3 of shared/auto_placement.h with the optimizer states placed by `device_optimizer`.
AutoPlacement place(const Scenario& sc, int chunks, const std::vector<bool>& device_optimizer,
                    const std::function<Program(const ChunkPlacement&, const AutoOperatorPlan*, AutoRecord*)>& generate) {
  AutoPlacement r;
  r.chunks.host.assign(size_t(chunks), false);
  r.chunks.device_optimizer = device_optimizer;
  r.cap_bytes = static_cast<int64_t>(kAutoDeviceCapRatio * double(sc.cluster.hbm_bytes()));
  AutoRecord warm;
  const Program w = generate(r.chunks, nullptr, &warm);
  const MemoryProfile wm = memory_profile(w);
  r.warmup_peak_bytes = r.peak_device_bytes = wm.peak_device_bytes;
  if (wm.peak_device_bytes <= r.cap_bytes) return r;
  r.plan.cap_bytes = r.cap_bytes;
  r.plan.non_model = non_model_per_operator(w, warm);
  r.plan.uses = warm.uses;
  // Step 3: a chunk that starts on the device and had to be evicted starts on the host instead.
  for (;;) {
    AutoRecord rec;
    const Program p = generate(r.chunks, &r.plan, &rec);
    if (rec.victim >= 0) {
      r.chunks.host[size_t(chunks - 1 - rec.victim)] = true;  // buckets are in backward order
      continue;
    }
    if (rec.failed_op >= 0)
      throw Error(sc.origin + ": strategy.offload auto: no placement fits: rank " + std::to_string(p.rank) + " needs " +
                      std::to_string(rec.failed_need) + " bytes at " + describe(sc, rec, rec.failed_op) + " (" +
                      std::to_string(rec.failed_non_model) +
                      " of them non-model) with every chunk it does not use evicted, and HBM less the 10 % margin is " +
                      std::to_string(r.cap_bytes) + " bytes (cluster.hbm_gib " + std::to_string(sc.cluster.hbm_gib) +
                      (sc.strategy.gpu_margin_mem_ratio > 0
                           ? std::string(", strategy.gpu_margin_mem_ratio ") + std::to_string(sc.strategy.gpu_margin_mem_ratio) +
                                 " keeps optimizer states on the device"
                           : std::string()) +
                      ")",
                  ErrorKind::kOutOfMemory);
    const MemoryProfile m = memory_profile(p);
    r.peak_device_bytes = m.peak_device_bytes;
    if (m.peak_device_bytes > r.cap_bytes)
      throw Error(sc.origin + ": strategy.offload auto: the per-operator plan peaks at " +
                      std::to_string(m.peak_device_bytes) + " bytes, above its cap of " + std::to_string(r.cap_bytes),
                  ErrorKind::kInternal);
    r.moves = rec.moves;
    return r;
  }
}

}  // namespace

AutoPlacement plan_auto_placement(const Scenario& sc, const std::vector<int64_t>& fp32_shard_bytes,
                                  int64_t largest_chunk_bytes,
                                  const std::function<Program(const ChunkPlacement&, const AutoOperatorPlan*, AutoRecord*)>& generate) {
  const int chunks = int(fp32_shard_bytes.size());
  const int64_t warmup_cap = static_cast<int64_t>(kAutoWarmupModelDataRatio * double(sc.cluster.hbm_bytes()));
  if (largest_chunk_bytes > warmup_cap)
    throw Error(sc.origin + ": strategy.offload auto: Gemini's warm-up iteration lets model data use 0.2 x HBM (" +
                    std::to_string(warmup_cap) + " bytes, cluster.hbm_gib " + std::to_string(sc.cluster.hbm_gib) +
                    ") and the largest chunk gathered needs " + std::to_string(largest_chunk_bytes) +
                    " bytes (lower strategy.chunk_min_m or strategy.chunk_search_range_m)",
                ErrorKind::kOutOfMemory);
  AutoPlacement r = place(sc, chunks, std::vector<bool>(size_t(chunks), false), generate);
  const double ratio = sc.strategy.gpu_margin_mem_ratio;
  if (!(ratio > 0)) return r;
  // GeminiOptimizer._maybe_move_fp32_params (shared/auto_placement.h).
  const int64_t margin = std::max<int64_t>(0, sc.cluster.hbm_bytes() - r.peak_device_bytes);
  const double budget = ratio * double(margin) / kHybridAdamFp32ShardsPerParam;
  const std::vector<bool> device = margin_chunks(fp32_shard_bytes, budget);
  if (std::find(device.begin(), device.end(), true) != device.end()) r = place(sc, chunks, device, generate);
  r.margin_bytes = margin;
  r.margin_budget_bytes = budget;
  return r;
}

}  // namespace tandem
