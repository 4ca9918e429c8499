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
// 2.5D (Tesseract, Wang et al. 2021, arXiv 2105.14500; Colossal-AI parallel_2p5d): tp = d*q*q,
// d = strategy.tp_depth. Tensor index t = k*q*q + i*q + j: d depth layers, each a q x q grid as
// above; the batch is split over the d*q rows of all layers (layer k, row i: batch block k*q + i);
// the weights are the same blocks in every layer, so their gradients are summed over the depth
// group {t' + k*q*q} (k = 0..d-1) of each grid position t'.
//
// Group ids follow make_process_groups' (shared/process_groups.h): after them, for every tensor
// group in id order, for each depth layer its q row groups (ProcessGroup::axis 1) then its q
// column groups (axis 2); then, with d > 1, the q*q depth groups (axis 3).
#pragma once

#include <vector>

#include "shared/rank_grid.h"
#include "shared/schedule.h"

namespace tandem {

inline constexpr uint8_t kTpRowAxis = 1, kTpColumnAxis = 2, kTpDepthAxis = 3;

// q of tp_mode 2d and 2.5d, 1 for every other mode.
int tp2d_side(const Scenario& scenario);
// d of tp_mode 2.5d, 1 for every other mode.
int tp2d_depth(const Scenario& scenario);

struct Tp2dCoord {
  int q = 1, i = 0, j = 0;  // side, row, column
  int d = 1, k = 0;         // depth and depth layer (2.5d)
};
Tp2dCoord tp2d_coord(const Scenario& scenario, int tp_index);

// Appends the row, column (and depth) groups of tp_mode 2d or 2.5d with q > 1 (nothing
// otherwise: with q = 1 the 2d mode is the 1d mode with tp = 1; the validator refuses 2.5d with
// q = 1).
void append_tp2d_groups(const Scenario& scenario, const RankGrid& grid, std::vector<ProcessGroup>& groups);

class Tp2dGroups {
 public:
  Tp2dGroups(const Scenario& scenario, const RankGrid& grid);
  GroupId row(RankCoord c) const;     // kNoId unless tp_mode 2d, q > 1
  GroupId column(RankCoord c) const;  // kNoId unless tp_mode 2d, q > 1
  GroupId depth(RankCoord c) const;   // kNoId unless tp_mode 2.5d, d > 1

 private:
  GroupId grid_base(RankCoord c) const;
  const RankGrid* grid_;
  int q_, d_;
  GroupId base_;
};

}  // namespace tandem
