#pragma once
// What the one-block-per-row kernels (norms, cross-entropy) share: float loads and stores of the
// storage types, block reductions, launch shapes and checks, and the reduction of one row.

#include <cstdint>

#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/detail/convert.cuh"
#include "kernels/cuda/detail/grid.h"
#include "kernels/cuda/detail/reduce.cuh"

namespace tandem::kernels::cuda::detail {

// op over f(c) for the columns c of one row, each thread taking every blockDim.x-th column from
// threadIdx.x, then over the block (block_reduce's rules): every thread gets the result.
template <typename Op, typename F>
__device__ float reduce_row(std::int64_t cols, Op op, F f) {
  float acc = Op::kIdentity;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) acc = op(acc, f(c));
  return block_reduce(acc, op);
}

}  // namespace tandem::kernels::cuda::detail
