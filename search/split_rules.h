// The loader's strategy rules that read a point's layout, sequence mode, pipeline, micro-batch and
// global batch but not its ZeRO stage, recompute, offload or software switches, decided once per
// setting of the axes they read instead of once per point (issue #17: in the 530B space most of the
// points whose layout passes are refused by global_batch not being a multiple of dp*micro_batch).
//
// The split of a point is its layout (search/layout_rules.h) with its sp_mode, pp_schedule,
// virtual_stages, micro_batch and global_batch. The resolver (shared/scenario_resolver.cc,
// Resolver::run) resolves the model and the cluster (fields no point sets), then the strategy
// (shared/strategy_rules.cc), in this order: the spellings of the modes, the ranges (zero_stage
// 0..3 and the others pass for every point of the space, `eligible`), the layout rules, then
//   the pipeline   layers % (pp*virtual_stages), virtual_stages > 1 only with interleaved,
//   the batch      global_batch % (dp*micro_batch), interleaved's pp >= 2, virtual_stages >= 2 and
//                  micro-batches a multiple of pp,
//   the sequence   sp > 1 only with an axis of its own, such an axis needs sp >= 2, sp | seq_len,
//                  ulysses' tp*sp | heads, shared/sequence_rules.cc (ulysses and ring_attention
//                  with tp_mode 1d only, ulysses' tp*sp | kv_heads, ring_attention without
//                  dropout and 2*sp | seq_len), megatron with 1d only and tp | seq_len,
//   the grids      2.5d's side >= 2; 2d/2.5d: the grid rows | micro_batch, layernorm, not with
//                  ring or ulysses; 3d's rules,
// and only then shared/offload_rules.cc (the first rule that reads offload or zero_stage), the
// software part (the switches) and the size checks. Every rule before the offload rules reads only
// the split and the scenario's own fields, and its message names only those values, the model's
// fields and the origins of the split's keys (the point's own assignments). So when
// `refused_by_split` holds, some rule before the offload rules refuses the point, and every eligible
// point of the same split is refused at the same rule with the same message: the loader's message
// for one point of it is every one's. Like the layout's, the predicate is sound, not complete (it
// mirrors the rules above but 3d's and the last two of Colossal-AI's ring: flash attention and
// selective recompute); a
// split it lets through is checked point by point by the loader as before.
#pragma once

#include <cstdint>
#include <tuple>

#include "scenario.pb.h"
#include "search/search_space.h"

namespace tandem::search {

// (dp, tp, pp, sp, tp_mode, tp_depth, sp_mode, schedule, virtual_stages, micro_batch, global_batch),
// the Candidate's own values (-1 / 0: the scenario's).
using SplitKey = std::tuple<int, int, int, int, int, int, int, int, int, int, int>;

SplitKey split_of(const Candidate& c);

// True when a rule of the list above refuses the point's split on `base`'s model and cluster
// (`base`: the scenario with the user's --set list applied and the presets merged).
bool refused_by_split(const Candidate& c, const proto::Scenario& base);

// Gemini's two rules (shared/offload_rules.cc, the last strategy rules before the software part):
// offload params or auto with pp != 1, or with dp*sp > 1 and zero_stage != 3. Every rule the
// resolver runs before them reads only the point's split, its recompute (sp_mode ring refuses
// selective, shared/sequence_rules.cc) and the scenario's own fields, and the offload rules before
// these two pass for every point of the space (offload_fraction as the space sets it, the margin
// ratio and chunk sizes the scenario's). So all points with the same GeminiKey where
// `refused_by_gemini` holds are refused at the same rule with the same message: the pipeline rule's
// names the mode and pp, the ZeRO rule's the mode and zero_stage, and both the origins of the point's
// own keys. The key leaves zero_stage out where the pipeline rule applies (it comes first and does
// not read it). Sound, not complete: false where a value is not one the space spells.
using GeminiKey = std::tuple<SplitKey, int, int, int>;  // (split, offload, recompute, zero_stage or -2)
bool refused_by_gemini(const Candidate& c, const proto::Scenario& base, GeminiKey* key);

}  // namespace tandem::search
