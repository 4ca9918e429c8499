#include "shared/schedule.h"

#include "shared/error.h"
#include "shared/process_groups.h"
#include "shared/rank_grid.h"
#include "shared/step_generator.h"

namespace tandem {

Schedule::Schedule(Scenario scenario) : scenario_(std::move(scenario)) {
  const StrategySpec& st = scenario_.strategy;
  grid_ = std::make_unique<RankGrid>(st.dp, st.pp, st.tp, st.sp);
  groups_ = make_process_groups(scenario_, *grid_);
  index_groups();
  generator_ = make_step_generator(scenario_, *grid_, groups_);
  generated_ = true;
}

Schedule::Schedule(Scenario scenario, int world_size, std::vector<ProcessGroup> groups,
                   std::unique_ptr<ProgramGenerator> generator)
    : scenario_(std::move(scenario)),
      grid_(std::make_unique<RankGrid>(world_size, 1, 1, 1)),
      groups_(std::move(groups)),
      generator_(std::move(generator)) {
  for (size_t i = 0; i < groups_.size(); ++i) {
    if (groups_[i].id != i) throw Error("schedule: group " + std::to_string(i) + " has id " + std::to_string(groups_[i].id));
    for (int r : groups_[i].ranks)
      if (r < 0 || r >= world_size) throw Error("schedule: group " + std::to_string(i) + " names rank " + std::to_string(r));
  }
  index_groups();
}

Schedule::~Schedule() = default;
Schedule::Schedule(Schedule&&) noexcept = default;
Schedule& Schedule::operator=(Schedule&&) noexcept = default;

void Schedule::index_groups() {
  rank_groups_.assign(grid_->size(), {});
  for (const ProcessGroup& g : groups_)
    for (int r : g.ranks) rank_groups_[r].push_back(g.id);
}

int Schedule::world_size() const { return grid_->size(); }

GroupId Schedule::group_of(int rank, GroupKind kind, int axis) const {
  for (GroupId id : rank_groups_.at(rank)) {
    const ProcessGroup& g = groups_[id];
    if (g.kind == kind && g.axis == axis) return id;
  }
  return kNoId;
}

Program Schedule::program(int rank) const {
  if (rank < 0 || rank >= world_size())
    throw Error("schedule: rank " + std::to_string(rank) + " outside world of " + std::to_string(world_size()));
  return generator_->generate(rank);
}

std::vector<RankClass> Schedule::rank_classes() const {
  std::vector<RankClass> classes;
  if (!generated_) {
    for (int r = 0; r < world_size(); ++r) classes.push_back({r, 1});
    return classes;
  }
  // Data-parallel replicas and the tensor/sequence ranks of one stage run the same program up to
  // group ids, peers and the vocabulary shard: one class per pipeline stage.
  const RankGrid& g = *grid_;
  for (int stage = 0; stage < g.pp(); ++stage)
    classes.push_back({g.rank({0, stage, 0, 0}), g.dp() * g.tp() * g.sp()});
  return classes;
}

int Schedule::representative_of(int rank) const {
  if (!generated_) return rank;
  RankCoord c = grid_->coord(rank);
  return grid_->rank({0, c.pp, 0, 0});
}

int Schedule::peer_for(int rank, int peer_of_representative) const {
  if (!generated_) return peer_of_representative;
  // The representative sits at dp = tp = sp = 0 of `rank`'s stage; a peer is the same offset from
  // `rank` on the grid, wrapping around each axis (a tensor ring's exchange partner of the last
  // tensor rank is rank 0; a pipeline peer shares the dp/tp/sp coordinates).
  const RankGrid& g = *grid_;
  const RankCoord r = g.coord(rank), p = g.coord(peer_of_representative);
  return g.rank({(r.dp + p.dp) % g.dp(), p.pp, (r.tp + p.tp) % g.tp(), (r.sp + p.sp) % g.sp()});
}

GroupId Schedule::group_for(int rank, GroupId group_of_representative) const {
  if (!generated_) return group_of_representative;
  const ProcessGroup& g = groups_.at(group_of_representative);
  return group_of(rank, g.kind, g.axis);
}

}  // namespace tandem
