#include "shared/tp3d_groups.h"

#include "shared/process_groups.h"

namespace tandem {

int tp3d_side(const Scenario& sc) {
  if (sc.strategy.tp_mode != TpMode::k3d) return 1;
  int q = 1;
  while ((q + 1) * (q + 1) * (q + 1) <= sc.strategy.tp) ++q;
  return q;
}

Tp3dCoord tp3d_coord(const Scenario& sc, int tp_index) {
  Tp3dCoord c;
  c.q = tp3d_side(sc);
  c.a = tp_index % c.q;
  c.b = tp_index / c.q % c.q;
  c.c = tp_index / (c.q * c.q);
  return c;
}

void append_tp3d_groups(const Scenario& sc, const RankGrid& g, std::vector<ProcessGroup>& groups) {
  const int q = tp3d_side(sc);
  if (q < 2) return;
  const int stride[3] = {1, q, q * q};
  for (int dd = 0; dd < g.dp(); ++dd)
    for (int p = 0; p < g.pp(); ++p)
      for (int s = 0; s < g.sp(); ++s)
        for (int axis = 0; axis < 3; ++axis) {
          // The other two axes' strides, lower one first: the group index is o1 + o2*q.
          const int s1 = stride[axis == 0 ? 1 : 0], s2 = stride[axis == 2 ? 1 : 2];
          for (int o2 = 0; o2 < q; ++o2)
            for (int o1 = 0; o1 < q; ++o1) {
              ProcessGroup pg;
              pg.id = static_cast<GroupId>(groups.size());
              pg.kind = GroupKind::kTp;
              pg.axis = static_cast<uint8_t>(axis + 1);
              for (int m = 0; m < q; ++m) pg.ranks.push_back(g.rank({dd, p, o1 * s1 + o2 * s2 + m * stride[axis], s}));
              groups.push_back(std::move(pg));
            }
        }
}

Tp3dGroups::Tp3dGroups(const Scenario& sc, const RankGrid& g)
    : grid_(&g), q_(tp3d_side(sc) > 1 ? tp3d_side(sc) : 0), base_(GroupIds(sc, g).end()) {}

GroupId Tp3dGroups::axis(RankCoord c, int axis) const {
  if (q_ == 0 || axis < 1 || axis > 3) return kNoId;
  const GroupId tp_group = (c.dp * grid_->pp() + c.pp) * grid_->sp() + c.sp;
  const int a = c.tp % q_, b = c.tp / q_ % q_, cc = c.tp / (q_ * q_);
  const int index = axis == 1 ? b + cc * q_ : axis == 2 ? a + cc * q_ : a + b * q_;
  return base_ + (tp_group * 3 + (axis - 1)) * q_ * q_ + index;
}

}  // namespace tandem
