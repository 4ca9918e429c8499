#pragma once
// Deterministic column sums for the gamma/beta gradients of the norms: a block of
// kColumnSumWidth x kColumnSumDepth threads owns kColumnSumWidth adjacent columns; each thread row
// walks a strided subset of the rows (reads of a warp are coalesced along the columns), then the
// block adds the per-thread partials in a fixed order.

#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda::detail {

constexpr int kColumnSumWidth = 32;
constexpr int kColumnSumDepth = 8;

// Returns, in thread row 0 (threadIdx.y == 0), the sum over all rows r of terms(r, c) for this
// thread's column c = blockIdx.x * kColumnSumWidth + threadIdx.x; two sums at once, as the .x and
// .y of a float2. `Terms` is a device functor float2(int64 r, int64 c). Every thread of the block
// must reach it.
template <typename Terms>
__device__ float2 column_sum(std::int64_t rows, std::int64_t cols, Terms terms) {
  __shared__ float2 partial[kColumnSumDepth][kColumnSumWidth];
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kColumnSumWidth + threadIdx.x;
  float2 acc = make_float2(0.0f, 0.0f);
  if (c < cols) {
    for (std::int64_t r = threadIdx.y; r < rows; r += kColumnSumDepth) {
      const float2 t = terms(r, c);
      acc.x += t.x;
      acc.y += t.y;
    }
  }
  partial[threadIdx.y][threadIdx.x] = acc;
  __syncthreads();
  float2 total = make_float2(0.0f, 0.0f);
  if (threadIdx.y == 0) {
    for (int y = 0; y < kColumnSumDepth; ++y) {
      total.x += partial[y][threadIdx.x].x;
      total.y += partial[y][threadIdx.x].y;
    }
  }
  return total;  // meaningful in thread row 0 only
}

}  // namespace tandem::kernels::cuda::detail
