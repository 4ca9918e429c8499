#include "shared/tp2d_groups.h"

#include "shared/process_groups.h"

namespace tandem {

int tp2d_side(const Scenario& sc) {
  if (sc.strategy.tp_mode != TpMode::k2d) return 1;
  int q = 1;
  while ((q + 1) * (q + 1) <= sc.strategy.tp) ++q;
  return q;
}

Tp2dCoord tp2d_coord(const Scenario& sc, int tp_index) {
  Tp2dCoord c;
  c.q = tp2d_side(sc);
  c.i = tp_index / c.q;
  c.j = tp_index % c.q;
  return c;
}

void append_tp2d_groups(const Scenario& sc, const RankGrid& g, std::vector<ProcessGroup>& groups) {
  const int q = tp2d_side(sc);
  if (q < 2) return;
  auto add = [&](uint8_t axis, std::vector<int> ranks) {
    ProcessGroup pg;
    pg.id = static_cast<GroupId>(groups.size());
    pg.kind = GroupKind::kTp;
    pg.axis = axis;
    pg.ranks = std::move(ranks);
    groups.push_back(std::move(pg));
  };
  // Tensor groups in id order: (dp, pp, sp) with sp fastest (GroupIds::tp).
  for (int d = 0; d < g.dp(); ++d)
    for (int p = 0; p < g.pp(); ++p)
      for (int s = 0; s < g.sp(); ++s) {
        for (int i = 0; i < q; ++i) {
          std::vector<int> ranks;
          for (int k = 0; k < q; ++k) ranks.push_back(g.rank({d, p, i * q + k, s}));
          add(kTpRowAxis, std::move(ranks));
        }
        for (int j = 0; j < q; ++j) {
          std::vector<int> ranks;
          for (int k = 0; k < q; ++k) ranks.push_back(g.rank({d, p, j + k * q, s}));
          add(kTpColumnAxis, std::move(ranks));
        }
      }
}

Tp2dGroups::Tp2dGroups(const Scenario& sc, const RankGrid& g)
    : grid_(&g), q_(tp2d_side(sc) > 1 ? tp2d_side(sc) : 0), base_(GroupIds(sc, g).end()) {}

GroupId Tp2dGroups::row(RankCoord c) const {
  if (q_ == 0) return kNoId;
  const GroupId tp_group = (c.dp * grid_->pp() + c.pp) * grid_->sp() + c.sp;
  return base_ + tp_group * 2 * q_ + c.tp / q_;
}

GroupId Tp2dGroups::column(RankCoord c) const {
  if (q_ == 0) return kNoId;
  const GroupId tp_group = (c.dp * grid_->pp() + c.pp) * grid_->sp() + c.sp;
  return base_ + tp_group * 2 * q_ + q_ + c.tp % q_;
}

}  // namespace tandem
