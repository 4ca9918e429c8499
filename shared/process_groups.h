// The process groups of a strategy, derived from its rank grid (shared/rank_grid.h). Ids are
// dense and assigned kind by kind: tensor groups first (one per (dp, pp, sp)), then pipeline
// (one per (dp, tp, sp)), data (one per (pp, tp, sp)), sequence when sp > 1 (one per
// (dp, pp, tp)), and, when embeddings are tied across pipeline stages, the embedding groups
// {first stage, last stage} (one per (dp, tp, sp)), and when sp > 1 the data-and-sequence groups
// (kind kDp, axis 1; one per (pp, tp), ranks in (dp, sp) order) over which the gradients of
// ring-attention and Ulysses runs are reduced; then the row and column groups of 2D tensor
// parallelism (shared/tp2d_groups.h). Within a group, ranks are in axis order.
#pragma once

#include <vector>

#include "shared/rank_grid.h"
#include "shared/schedule.h"

namespace tandem {

std::vector<ProcessGroup> make_process_groups(const Scenario& scenario, const RankGrid& grid);

// Id arithmetic for the layout above.
struct GroupIds {
  GroupIds(const Scenario& scenario, const RankGrid& grid);
  GroupId tp(RankCoord c) const;
  GroupId pp(RankCoord c) const;
  GroupId dp(RankCoord c) const;
  GroupId sp(RankCoord c) const;         // kNoId when sp == 1
  GroupId embedding(RankCoord c) const;  // kNoId when there is no embedding group
  GroupId data_seq(RankCoord c) const;   // kNoId when sp == 1
  GroupId end() const;                    // the first id after these groups (shared/tp2d_groups.h)

 private:
  const RankGrid* grid_;
  GroupId tp_base_, pp_base_, dp_base_, sp_base_, emb_base_, dsp_base_;
  bool has_sp_, has_emb_;
  GroupId end_;
};

}  // namespace tandem
