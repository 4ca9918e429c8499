#include "shared/process_groups.h"

#include "shared/tp2d_groups.h"
#include "shared/tp3d_groups.h"

namespace tandem {
namespace {

bool has_embedding_group(const Scenario& s) { return s.model.tied_embeddings && s.strategy.pp > 1; }

}  // namespace

GroupIds::GroupIds(const Scenario& scenario, const RankGrid& g) : grid_(&g) {
  has_sp_ = g.sp() > 1;
  has_emb_ = has_embedding_group(scenario);
  tp_base_ = 0;
  pp_base_ = tp_base_ + g.dp() * g.pp() * g.sp();
  dp_base_ = pp_base_ + g.dp() * g.tp() * g.sp();
  sp_base_ = dp_base_ + g.pp() * g.tp() * g.sp();
  emb_base_ = sp_base_ + (has_sp_ ? g.dp() * g.pp() * g.tp() : 0);
  dsp_base_ = emb_base_ + (has_emb_ ? g.dp() * g.tp() * g.sp() : 0);
  end_ = dsp_base_ + (has_sp_ ? g.pp() * g.tp() : 0);
}

GroupId GroupIds::end() const { return end_; }

GroupId GroupIds::tp(RankCoord c) const { return tp_base_ + (c.dp * grid_->pp() + c.pp) * grid_->sp() + c.sp; }
GroupId GroupIds::pp(RankCoord c) const { return pp_base_ + (c.dp * grid_->tp() + c.tp) * grid_->sp() + c.sp; }
GroupId GroupIds::dp(RankCoord c) const { return dp_base_ + (c.pp * grid_->tp() + c.tp) * grid_->sp() + c.sp; }
GroupId GroupIds::sp(RankCoord c) const {
  return has_sp_ ? sp_base_ + (c.dp * grid_->pp() + c.pp) * grid_->tp() + c.tp : kNoId;
}
GroupId GroupIds::embedding(RankCoord c) const {
  return has_emb_ ? emb_base_ + (c.dp * grid_->tp() + c.tp) * grid_->sp() + c.sp : kNoId;
}

GroupId GroupIds::data_seq(RankCoord c) const { return has_sp_ ? dsp_base_ + c.pp * grid_->tp() + c.tp : kNoId; }

std::vector<ProcessGroup> make_process_groups(const Scenario& scenario, const RankGrid& g) {
  std::vector<ProcessGroup> groups;
  auto add = [&](GroupKind kind, std::vector<int> ranks) {
    ProcessGroup pg;
    pg.id = static_cast<GroupId>(groups.size());
    pg.kind = kind;
    pg.ranks = std::move(ranks);
    groups.push_back(std::move(pg));
  };
  // One group along `axis` per combination of the other axes, taken in rank order (which is the
  // order of those axes, dp slowest); within it the ranks along the axis.
  auto add_axis = [&](GroupKind kind, int RankCoord::*axis, int extent) {
    for (int r = 0; r < g.size(); ++r) {
      RankCoord c = g.coord(r);
      if (c.*axis != 0) continue;
      std::vector<int> ranks;
      for (int i = 0; i < extent; ++i) {
        c.*axis = i;
        ranks.push_back(g.rank(c));
      }
      add(kind, std::move(ranks));
    }
  };
  add_axis(GroupKind::kTp, &RankCoord::tp, g.tp());
  add_axis(GroupKind::kPp, &RankCoord::pp, g.pp());
  add_axis(GroupKind::kDp, &RankCoord::dp, g.dp());
  if (g.sp() > 1) add_axis(GroupKind::kSp, &RankCoord::sp, g.sp());
  if (has_embedding_group(scenario))
    for (int d = 0; d < g.dp(); ++d)
      for (int t = 0; t < g.tp(); ++t)
        for (int s = 0; s < g.sp(); ++s)
          add(GroupKind::kEmbedding, {g.rank({d, 0, t, s}), g.rank({d, g.pp() - 1, t, s})});
  if (g.sp() > 1)
    for (int p = 0; p < g.pp(); ++p)
      for (int t = 0; t < g.tp(); ++t) {
        std::vector<int> ranks;
        for (int d = 0; d < g.dp(); ++d)
          for (int s = 0; s < g.sp(); ++s) ranks.push_back(g.rank({d, p, t, s}));
        add(GroupKind::kDp, std::move(ranks));
        groups.back().axis = 1;
      }
  append_tp2d_groups(scenario, g, groups);
  append_tp3d_groups(scenario, g, groups);
  return groups;
}

}  // namespace tandem
