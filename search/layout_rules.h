// The loader's rules that depend on a point's layout only, decided once per layout instead of once
// per point (issue #17: 150 M of the 530B space's 172 M points are refused by tp not dividing the
// heads).
//
// The layout of a point is (dp, tp, pp, sp, tp_mode, tp_depth). The resolver
// (shared/scenario_resolver.cc, Resolver::run) checks, in this order: the model and the cluster
// (fields no point sets), then in shared/strategy_rules.cc the spellings of the modes (a point
// sets only the tables' own spellings), the ranges of the degrees and counts, zero_stage and
// bucket_mb, then dp*tp*pp*sp = cluster.gpus, tp_depth only with 2.5d, the grid's shape (2d a
// square, 2.5d d times a square, 3d a cube) and the grid side dividing heads, kv_heads, hidden
// (2d/2.5d/3d), ffn_hidden and vocab. Every rule up to there reads the scenario's own fields, the
// layout, and the ranges of micro_batch, virtual_stages, global_batch and zero_stage. A point of the
// space has virtual_stages in 1..8 (and pp*v <= layers <= kMaxLayers), global_batch >= 1 and
// zero_stage in 0..3, so the ranges pass; micro_batch passes when it is at most kMaxMicroBatch
// (`eligible` below). So when `refused_by_layout` holds, every eligible point of the layout fails
// at the same rule with the same message (the message names only the layout's values, the model's
// fields and the origins of those, which are the point's assignments of the layout's keys): the
// loader's message for one point of it is every one's. The predicate is sound, not complete: a
// layout it lets through is checked point by point by the loader as before.
#pragma once

#include <cstdint>

#include "scenario.pb.h"
#include "search/search_space.h"

namespace tandem::search {

struct LayoutKey {
  int dp = 1, tp = 1, pp = 1, sp = 1;
  int tp_mode = -1;  // index into kTpModes; -1: the scenario's (fixed by the user)
  int tp_depth = 0;  // 0: the scenario's
  bool operator==(const LayoutKey& o) const {
    return dp == o.dp && tp == o.tp && pp == o.pp && sp == o.sp && tp_mode == o.tp_mode && tp_depth == o.tp_depth;
  }
};

LayoutKey layout_of(const Candidate& c);

// The point's other values keep the resolver's range checks before the layout rules passing (see above).
bool eligible(const Candidate& c, const proto::Scenario& base);

// True when a rule of the list above refuses the layout on `base`'s model and cluster.gpus
// (`base`: the scenario with the user's --set list applied and the presets merged).
bool refused_by_layout(const LayoutKey& key, const proto::Scenario& base);

}  // namespace tandem::search
