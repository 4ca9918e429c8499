#include "shared/offload_rules.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>

namespace tandem {
namespace {

std::string num(double v) {
  char buf[40];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

void check_offload_rules(const StrategySpec& s, const RuleFail& fail, const RuleSee& see) {
  if (!std::isfinite(s.offload_fraction) || s.offload_fraction < 0 || s.offload_fraction > 1)
    fail("strategy.offload_fraction", "must be in [0, 1], got " + num(s.offload_fraction));
  if (s.offload == Offload::kParams && !(s.offload_fraction > 0))
    fail("strategy.offload_fraction", "offload params needs the host's share of the parameter chunks, in (0, 1]: got " +
                                          num(s.offload_fraction) + see("strategy.offload"));
  if (s.offload != Offload::kParams && s.offload_fraction != 0)
    fail("strategy.offload_fraction", std::string("is read by offload params only, and offload is ") +
                                          to_string(s.offload) + see("strategy.offload"));
  // Gemini's GeminiOptimizer asserts 0 <= gpu_margin_mem_ratio <= 1 (gemini_optimizer.py:185 at
  // 4f9953be) and ignores it, with a warning, unless the placement is auto (:194-195).
  if (!std::isfinite(s.gpu_margin_mem_ratio) || s.gpu_margin_mem_ratio < 0 || s.gpu_margin_mem_ratio > 1)
    fail("strategy.gpu_margin_mem_ratio", "must be in [0, 1] (Gemini's GeminiOptimizer asserts it), got " +
                                              num(s.gpu_margin_mem_ratio));
  if (s.offload != Offload::kAuto && s.gpu_margin_mem_ratio != 0)
    fail("strategy.gpu_margin_mem_ratio", std::string("is read by offload auto only (Gemini: meaningless unless the "
                                                      "placement policy is auto), and offload is ") +
                                              to_string(s.offload) + see("strategy.offload"));
  // 2^20 * 2^20 elements: far above any model, and no overflow when turned into elements.
  for (const auto& [path, v] : {std::pair<const char*, double>{"strategy.chunk_search_range_m", s.chunk_search_range_m},
                                {"strategy.chunk_min_m", s.chunk_min_m}})
    if (!std::isfinite(v) || v < 0 || v > 1048576)
      fail(path, "must be in [0, 1048576] (2^20 elements each), got " + num(v));
  if (s.offload != Offload::kParams && s.offload != Offload::kAuto) return;
  const std::string mode = std::string("offload ") + to_string(s.offload);
  // Gemini has no pipeline axis: GeminiPlugin's process mesh is ZeRO x extra data-parallel x
  // tensor (gemini_plugin.py:42, :551 at 4f9953be335e; its __init__, :442-485, takes no pp_size),
  // and the plugin with pipelines, HybridParallelPlugin, allows ZeRO stages 0-2 only
  // (hybrid_parallel_plugin.py:1122) through its own optimizer, not Gemini's chunks.
  if (s.pp != 1)
    fail("strategy.offload", mode + " is Gemini's chunk placement, which Colossal-AI does not combine with "
                                    "pipeline parallelism (GeminiPlugin's process mesh is ZeRO x data x tensor, "
                                    "colossalai/booster/plugin/gemini_plugin.py:42 and :551 at 4f9953be; "
                                    "HybridParallelPlugin, which has pipelines, allows ZeRO stages 0-2 only, "
                                    "hybrid_parallel_plugin.py:1122): set strategy.pp=1, got pp = " + num(s.pp) +
                                 see("strategy.pp"));
  if (int64_t{s.dp} * s.sp > 1 && s.zero_stage != 3)
    fail("strategy.offload", mode + " moves ZeRO-3 chunks (Gemini shards every chunk over the data-parallel "
                                    "group): set strategy.zero_stage=3, got " + num(s.zero_stage) +
                                 see("strategy.zero_stage"));
}

}  // namespace tandem
