// The rank grid of a strategy: how a global rank maps to its coordinates on the data, pipeline,
// tensor and sequence axes. The order is the seed's (Colossal-AI ProcessGroupMesh, axes
// (dp, pp, tp, sp) in C order): sequence fastest, then tensor, then pipeline, data slowest:
//   rank = ((dp * PP + pp) * TP + tp) * SP + sp
// so a tensor-parallel group of 8 fills one 8-GPU node and pipeline neighbours are TP*SP apart.
#pragma once

#include <vector>

namespace tandem {

struct RankCoord {
  int dp = 0, pp = 0, tp = 0, sp = 0;
};

class RankGrid {
 public:
  RankGrid(int dp, int pp, int tp, int sp) : dp_(dp), pp_(pp), tp_(tp), sp_(sp) {}

  int size() const { return dp_ * pp_ * tp_ * sp_; }
  int dp() const { return dp_; }
  int pp() const { return pp_; }
  int tp() const { return tp_; }
  int sp() const { return sp_; }

  int rank(RankCoord c) const { return ((c.dp * pp_ + c.pp) * tp_ + c.tp) * sp_ + c.sp; }
  RankCoord coord(int rank) const {
    RankCoord c;
    c.sp = rank % sp_;
    rank /= sp_;
    c.tp = rank % tp_;
    rank /= tp_;
    c.pp = rank % pp_;
    c.dp = rank / pp_;
    return c;
  }

 private:
  int dp_, pp_, tp_, sp_;
};

}  // namespace tandem
