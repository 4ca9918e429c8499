#include "search/split_rules.h"

#include <string>

#include "search/layout_rules.h"
#include "shared/integer_root.h"
#include "shared/scenario_resolver.h"
#include "shared/scenario_spellings.h"

namespace tandem::search {

namespace {

// The value a spelling names; false for one the loader would refuse (it speaks then).
template <class E, size_t N>
bool spelled(const std::string& spelling, const Spelling<E> (&table)[N], E* out) {
  for (const auto& s : table)
    if (same_spelling(spelling, s.name)) return *out = s.value, true;
  return false;
}

}  // namespace

SplitKey split_of(const Candidate& c) {
  return {c.dp, c.tp, c.pp, c.sp, c.tp_mode, c.tp_depth, c.sp_mode, c.schedule, c.virtual_stages, c.micro_batch,
          c.global_batch};
}

bool refused_by_split(const Candidate& c, const proto::Scenario& base) {
  if (!eligible(c, base)) return false;
  if (refused_by_layout(layout_of(c), base)) return true;
  const proto::Model& m = base.model();
  const proto::Strategy& st = base.strategy();
  // The values the resolver reads: the point's, or the scenario's where the user fixed the key.
  TpMode tp_mode;
  SpMode sp_mode;
  PpSchedule schedule;
  Norm norm;
  if (!spelled(c.tp_mode >= 0 ? kTpModes[c.tp_mode].value : st.tp_mode(), kTpModeSpellings, &tp_mode)) return false;
  if (!spelled(c.sp_mode >= 0 ? kSpModes[c.sp_mode].value : st.sp_mode(), kSpModeSpellings, &sp_mode)) return false;
  if (!spelled(c.schedule >= 0 ? kPipelineSchedules[c.schedule].value : st.pp_schedule(), kPpScheduleSpellings,
               &schedule))
    return false;
  if (!spelled(m.norm(), kNormSpellings, &norm)) return false;
  const int64_t dp = c.dp, tp = c.tp, pp = c.pp, sp = c.sp;
  const int64_t depth = c.tp_depth > 0 ? c.tp_depth : st.tp_depth();
  const int64_t v = c.schedule >= 0 ? c.virtual_stages : st.virtual_stages();
  const int64_t mb = c.micro_batch > 0 ? c.micro_batch : st.micro_batch();
  const int64_t g = c.global_batch > 0 ? c.global_batch : st.global_batch();
  const int64_t layers = m.layers(), heads = m.heads(), seq = m.seq_len();
  const int64_t kv = m.kv_heads() == 0 ? heads : m.kv_heads();
  // Out of range: the resolver speaks before (a range rule) or the figures below are not its own.
  if (dp < 1 || tp < 1 || pp < 1 || sp < 1 || depth < 1 || v < 1 || mb < 1 || g < 1 || layers < 1 || heads < 1 ||
      seq < 1 || kv < 1 || c.dp == 0)
    return false;
  // The grid's side (the layout rules passed, so the grid has its shape).
  int64_t side = tp;
  if (tp_mode == TpMode::k2d) side = isqrt(tp);
  if (tp_mode == TpMode::k2p5d) side = isqrt(tp / depth);
  if (tp_mode == TpMode::k3d) side = icbrt(tp);
  // Pipeline.
  if (layers % (pp * v) != 0) return true;
  if (v > 1 && schedule != PpSchedule::kInterleaved) return true;
  // Batch.
  if (g % (dp * mb) != 0) return true;
  if (schedule == PpSchedule::kInterleaved && (pp < 2 || v < 2 || (g / (dp * mb)) % pp != 0)) return true;
  // Sequence.
  const bool sp_axis = sp_mode == SpMode::kRing || sp_mode == SpMode::kUlysses || sp_mode == SpMode::kRingAttention;
  if (sp > 1 && !sp_axis) return true;
  if (sp_axis && sp < 2) return true;
  if (seq % sp != 0) return true;
  if (sp_mode == SpMode::kUlysses && heads % (tp * sp) != 0) return true;
  // Colossal-AI's ring self-attention with tp_mode 1d (shared/sequence_rules.cc,
  // check_ring_self_rules, in its order): tp > 1, then grouped-query heads, then dropout; its later
  // rules (flash attention, a resolved field, and selective recompute, not in the split) go to the
  // loader. With a grid, the grids' rules below speak.
  if (sp_mode == SpMode::kRing && sp >= 2 && tp_mode == TpMode::k1d) {
    if (tp > 1 || kv != heads || m.dropout() > 0) return true;
    return false;
  }
  if (sp >= 2 && (sp_mode == SpMode::kUlysses || sp_mode == SpMode::kRingAttention)) {
    if (tp_mode != TpMode::k1d) return true;
    if (sp_mode == SpMode::kUlysses && kv % (tp * sp) != 0) return true;
    if (sp_mode == SpMode::kRingAttention && (m.dropout() > 0 || seq % (2 * sp) != 0)) return true;
  }
  if (sp_mode == SpMode::kMegatron && (tp_mode != TpMode::k1d || seq % tp != 0)) return true;
  // The grids (3d's rules come last and are not mirrored).
  if (tp_mode == TpMode::k2p5d && side < 2) return true;
  if ((tp_mode == TpMode::k2d || tp_mode == TpMode::k2p5d) && side > 1) {
    const int64_t rows = tp_mode == TpMode::k2p5d ? side * depth : side;
    if (mb % rows != 0 || norm != Norm::kLayerNorm || sp_mode == SpMode::kUlysses || sp_mode == SpMode::kRing)
      return true;
  }
  return false;
}

bool refused_by_gemini(const Candidate& c, const proto::Scenario& base, GeminiKey* key) {
  if (!eligible(c, base)) return false;
  const proto::Strategy& st = base.strategy();
  Offload offload;
  if (!spelled(c.offload >= 0 ? kOffloads[c.offload].value : st.offload(), kOffloadSpellings, &offload)) return false;
  if (offload != Offload::kParams && offload != Offload::kAuto) return false;
  const int64_t zero = c.zero >= 0 ? c.zero : st.zero_stage();
  if (c.dp < 1 || c.pp < 1 || c.sp < 1 || zero < 0 || zero > 3) return false;
  const bool pipeline = c.pp != 1;
  if (!pipeline && !(int64_t{c.dp} * c.sp > 1 && zero != 3)) return false;
  *key = {split_of(c), c.offload, c.recompute, pipeline ? -2 : c.zero};
  return true;
}

}  // namespace tandem::search
