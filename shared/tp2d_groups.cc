#include "shared/tp2d_groups.h"

#include "shared/process_groups.h"

namespace tandem {

int tp2d_depth(const Scenario& sc) { return sc.strategy.tp_mode == TpMode::k2p5d ? sc.strategy.tp_depth : 1; }

int tp2d_side(const Scenario& sc) {
  if (sc.strategy.tp_mode != TpMode::k2d && sc.strategy.tp_mode != TpMode::k2p5d) return 1;
  const int per_layer = sc.strategy.tp / tp2d_depth(sc);
  int q = 1;
  while ((q + 1) * (q + 1) <= per_layer) ++q;
  return q;
}

Tp2dCoord tp2d_coord(const Scenario& sc, int tp_index) {
  Tp2dCoord c;
  c.q = tp2d_side(sc);
  c.d = tp2d_depth(sc);
  c.k = tp_index / (c.q * c.q);
  c.i = tp_index % (c.q * c.q) / c.q;
  c.j = tp_index % c.q;
  return c;
}

void append_tp2d_groups(const Scenario& sc, const RankGrid& g, std::vector<ProcessGroup>& groups) {
  const int q = tp2d_side(sc), depth = tp2d_depth(sc);
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
  for (int dd = 0; dd < g.dp(); ++dd)
    for (int p = 0; p < g.pp(); ++p)
      for (int s = 0; s < g.sp(); ++s) {
        auto rank = [&](int t) { return g.rank({dd, p, t, s}); };
        for (int k = 0; k < depth; ++k) {
          const int layer = k * q * q;
          for (int i = 0; i < q; ++i) {
            std::vector<int> ranks;
            for (int m = 0; m < q; ++m) ranks.push_back(rank(layer + i * q + m));
            add(kTpRowAxis, std::move(ranks));
          }
          for (int j = 0; j < q; ++j) {
            std::vector<int> ranks;
            for (int m = 0; m < q; ++m) ranks.push_back(rank(layer + j + m * q));
            add(kTpColumnAxis, std::move(ranks));
          }
        }
        if (depth > 1)
          for (int t = 0; t < q * q; ++t) {
            std::vector<int> ranks;
            for (int k = 0; k < depth; ++k) ranks.push_back(rank(t + k * q * q));
            add(kTpDepthAxis, std::move(ranks));
          }
      }
}

Tp2dGroups::Tp2dGroups(const Scenario& sc, const RankGrid& g)
    : grid_(&g), q_(tp2d_side(sc) > 1 ? tp2d_side(sc) : 0), d_(tp2d_depth(sc)), base_(GroupIds(sc, g).end()) {}

// The first id of the groups of c's tensor group.
GroupId Tp2dGroups::grid_base(RankCoord c) const {
  const GroupId tp_group = (c.dp * grid_->pp() + c.pp) * grid_->sp() + c.sp;
  const GroupId per_group = d_ * 2 * q_ + (d_ > 1 ? q_ * q_ : 0);
  return base_ + tp_group * per_group;
}

GroupId Tp2dGroups::row(RankCoord c) const {
  if (q_ == 0) return kNoId;
  const int k = c.tp / (q_ * q_), i = c.tp % (q_ * q_) / q_;
  return grid_base(c) + k * 2 * q_ + i;
}

GroupId Tp2dGroups::column(RankCoord c) const {
  if (q_ == 0) return kNoId;
  const int k = c.tp / (q_ * q_);
  return grid_base(c) + k * 2 * q_ + q_ + c.tp % q_;
}

GroupId Tp2dGroups::depth(RankCoord c) const {
  if (q_ == 0 || d_ < 2) return kNoId;
  return grid_base(c) + d_ * 2 * q_ + c.tp % (q_ * q_);
}

}  // namespace tandem
