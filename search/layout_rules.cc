#include "search/layout_rules.h"

#include <string>

#include "shared/integer_root.h"
#include "shared/scenario_limits.h"
#include "shared/scenario_resolver.h"
#include "shared/scenario_spellings.h"

namespace tandem::search {

namespace {

// The mode a spelling names; false for one the loader would refuse (it speaks then).
bool tp_mode_of(const std::string& spelling, TpMode* out) {
  for (const auto& s : kTpModeSpellings)
    if (same_spelling(spelling, s.name)) return *out = s.value, true;
  return false;
}

}  // namespace

LayoutKey layout_of(const Candidate& c) {
  LayoutKey k;
  k.dp = c.dp, k.tp = c.tp, k.pp = c.pp, k.sp = c.sp, k.tp_mode = c.tp_mode, k.tp_depth = c.tp_depth;
  return k;
}

bool eligible(const Candidate& c, const proto::Scenario&) {
  // micro_batch 0: the scenario's, the same for every point (its range check too).
  return c.micro_batch <= kMaxMicroBatch;
}

bool refused_by_layout(const LayoutKey& key, const proto::Scenario& base) {
  const proto::Model& m = base.model();
  // The model's resolution (shared/scenario_resolver.cc, Resolver::model): kv_heads 0 -> heads,
  // ffn_hidden 0 -> 4 hidden. A model the resolver refuses is refused before the layout: let it speak.
  const int64_t heads = m.heads(), hidden = m.hidden(), vocab = m.vocab();
  const int64_t kv = m.kv_heads() == 0 ? heads : m.kv_heads();
  const int64_t ffn = m.ffn_hidden() == 0 ? 4 * hidden : m.ffn_hidden();
  if (heads <= 0 || hidden <= 0 || vocab <= 0 || kv <= 0 || ffn <= 0) return false;
  if (key.dp < 1 || key.tp < 1 || key.pp < 1 || key.sp < 1) return false;
  TpMode mode;
  if (!tp_mode_of(key.tp_mode >= 0 ? kTpModes[key.tp_mode].value : base.strategy().tp_mode(), &mode)) return false;
  const int64_t depth = key.tp_depth > 0 ? key.tp_depth : base.strategy().tp_depth();
  if (depth < 1) return false;
  // strategy_rules.cc, in its order: dp*tp*pp*sp = cluster.gpus (the search sets dp).
  if (int64_t{key.dp} * key.tp * key.pp * key.sp != base.cluster().gpus()) return true;
  if (depth != 1 && mode != TpMode::k2p5d) return true;
  const int64_t tp = key.tp;
  int64_t side = tp;
  switch (mode) {
    case TpMode::k1d: break;
    case TpMode::k2d:
      side = isqrt(tp);
      if (side * side != tp) return true;
      break;
    case TpMode::k2p5d:
      side = tp % depth == 0 ? isqrt(tp / depth) : 0;
      if (tp % depth != 0 || side * side * depth != tp) return true;
      break;
    case TpMode::k3d:
      side = icbrt(tp);
      if (side * side * side != tp) return true;
      break;
  }
  if (heads % side || kv % side || ffn % side || vocab % side) return true;
  return mode != TpMode::k1d && hidden % side != 0;
}

}  // namespace tandem::search
