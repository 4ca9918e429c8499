// 2D tensor parallelism (Optimus, Xu et al. 2021, arXiv 2104.05343; Colossal-AI's legacy
// parallel_2d): the tp ranks of one (dp, pp, sp) form a q x q grid, q*q = strategy.tp. Tensor
// index t sits at row i = t / q, column j = t % q. The row group of i is {i*q + k} (k = 0..q-1, in
// k order: one node when q*q GPUs fit in it), the column group of j is {j + k*q}.
//
// Activations [b, s, h'] are split by batch over the rows and by features over the columns: rank
// (i, j) holds batch block i, feature block j. A weight W [out, in] (Y = X W^T) is split into
// q x q blocks: rank (i, j) holds out block j and in block i, so that SUMMA's step k broadcasts
// the activation block of column k along each row and the weight block of row k along each column.
//
// Group ids follow make_process_groups' (shared/process_groups.h): after them, for every tensor
// group in id order, its q row groups (ProcessGroup::axis 1) then its q column groups (axis 2).
#pragma once

#include <vector>

#include "shared/rank_grid.h"
#include "shared/schedule.h"

namespace tandem {

inline constexpr uint8_t kTpRowAxis = 1, kTpColumnAxis = 2;

// q of tp_mode 2d, 1 for every other mode.
int tp2d_side(const Scenario& scenario);

struct Tp2dCoord {
  int q = 1, i = 0, j = 0;  // side, row, column
};
Tp2dCoord tp2d_coord(const Scenario& scenario, int tp_index);

// Appends the row and column groups of tp_mode 2d with q > 1 (nothing otherwise: with q = 1 the
// 2d mode is the 1d mode with tp = 1).
void append_tp2d_groups(const Scenario& scenario, const RankGrid& grid, std::vector<ProcessGroup>& groups);

class Tp2dGroups {
 public:
  Tp2dGroups(const Scenario& scenario, const RankGrid& grid);
  GroupId row(RankCoord c) const;     // kNoId unless tp_mode 2d, q > 1
  GroupId column(RankCoord c) const;  // kNoId unless tp_mode 2d, q > 1

 private:
  const RankGrid* grid_;
  int q_;
  GroupId base_;
};

}  // namespace tandem
