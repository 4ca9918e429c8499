// 3D tensor parallelism (Bian et al. 2021, arXiv 2105.14450; Colossal-AI's legacy parallel_3d):
// the tp ranks of one (dp, pp, sp) form a q x q x q cube, q*q*q = strategy.tp. Tensor index t
// sits at a = t % q, b = t / q % q, c = t / (q*q). The A group of (b, c) is {a' + b*q + c*q*q}
// (a' = 0..q-1, in a' order: one node when q*q*q GPUs fit in it, or q of them do), the B group of
// (a, c) varies b, the C group of (a, b) varies c; a group's index of a rank is its coordinate
// on that axis.
//
// Between layers (the residual stream, layer norms' inputs and outputs) rank (a, b, c) holds
// batch block b*q + a (of q*q, micro_batch / q^2 samples) and feature block c (h / q): the layer
// norm reduces its row statistics over the C group. A linear whose input features are on axis C
// (qkv, fc1) all-gathers its input over A, its weight over B, and reduce-scatters its output over
// C, so that its output holds batch block b*q + c and feature block a; the next linear (o, fc2)
// swaps A and C and brings the layout back (shared/tp3d.h).
//
// Group ids follow make_process_groups' (shared/process_groups.h) and the 2D ones (none under
// 3d): for every tensor group in id order, its q*q A groups (ProcessGroup::axis 1, index b + c*q),
// then its q*q B groups (axis 2, index a + c*q), then its q*q C groups (axis 3, index a + b*q).
#pragma once

#include <vector>

#include "shared/rank_grid.h"
#include "shared/schedule.h"

namespace tandem {

inline constexpr uint8_t kTp3dAxisA = 1, kTp3dAxisB = 2, kTp3dAxisC = 3;

// q of tp_mode 3d, 1 for every other mode.
int tp3d_side(const Scenario& scenario);

struct Tp3dCoord {
  int q = 1, a = 0, b = 0, c = 0;
};
Tp3dCoord tp3d_coord(const Scenario& scenario, int tp_index);

// Appends the A, B and C groups of tp_mode 3d with q > 1 (nothing otherwise).
void append_tp3d_groups(const Scenario& scenario, const RankGrid& grid, std::vector<ProcessGroup>& groups);

class Tp3dGroups {
 public:
  Tp3dGroups(const Scenario& scenario, const RankGrid& grid);
  // The group of rank c along axis 1 (A), 2 (B) or 3 (C); kNoId unless tp_mode 3d with q > 1.
  GroupId axis(RankCoord c, int axis) const;

 private:
  const RankGrid* grid_;
  int q_;
  GroupId base_;
};

}  // namespace tandem
