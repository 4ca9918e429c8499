#pragma once
// Warp and block reductions in float. Blocks must be a whole number of warps (<= 1024 threads)
// and every thread of the block must reach block_reduce; every thread gets the result.

#include <cuda_runtime.h>

namespace tandem::kernels::cuda::detail {

constexpr int kWarpSize = 32;

struct Sum {
  __device__ float operator()(float a, float b) const { return a + b; }
  static constexpr float kIdentity = 0.0f;
};

struct Max {
  __device__ float operator()(float a, float b) const { return fmaxf(a, b); }
  static constexpr float kIdentity = -__builtin_huge_valf();
};

template <typename Op>
__device__ __forceinline__ float warp_reduce(float value, Op op) {
#pragma unroll
  for (int offset = kWarpSize / 2; offset > 0; offset /= 2) {
    value = op(value, __shfl_xor_sync(0xffffffffu, value, offset));
  }
  return value;
}

template <typename Op>
__device__ float block_reduce(float value, Op op) {
  __shared__ float partial[kWarpSize];
  const int lane = static_cast<int>(threadIdx.x) % kWarpSize;
  const int warp = static_cast<int>(threadIdx.x) / kWarpSize;
  const int warps = static_cast<int>(blockDim.x) / kWarpSize;
  value = warp_reduce(value, op);
  __syncthreads();  // a previous call's readers may still be reading partial
  if (lane == 0) partial[warp] = value;
  __syncthreads();
  return warp_reduce(lane < warps ? partial[lane] : Op::kIdentity, op);
}

}  // namespace tandem::kernels::cuda::detail
