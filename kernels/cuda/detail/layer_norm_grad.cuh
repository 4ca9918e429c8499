#pragma once
// The layer norm backward's pieces that the whole-row kernels (layer_norm.cu) and the split ones
// (split_layer_norm.cu, feature blocks of a row under 2D tensor parallelism) share:
// dx = rstd * (g - avg(g) - xhat * avg(g * xhat)), g = dy * gamma, xhat = (x - mean) * rstd, and
// dgamma += sum_rows dy * xhat, dbeta += sum_rows dy.

#include <cstdint>

#include "kernels/cuda/detail/column_sum.cuh"
#include "kernels/cuda/detail/row_reduction.cuh"

namespace tandem::kernels::cuda::detail {

// The two row sums {sum g, sum g * xhat} over the cols columns of one row (one block per row;
// every thread gets them).
template <typename T>
__device__ float2 layer_norm_grad_row_sums(const T* dyr, const T* xr, const T* gamma, float mu, float rs,
                                           std::int64_t cols) {
  float sum_g = 0.0f;
  float sum_g_xhat = 0.0f;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float g = to_float(dyr[c]) * to_float(gamma[c]);
    sum_g += g;
    sum_g_xhat += g * (to_float(xr[c]) - mu) * rs;
  }
  const float a = block_reduce(sum_g, Sum{});
  const float b = block_reduce(sum_g_xhat, Sum{});
  return make_float2(a, b);
}

// dx of one row from the row averages avg(g) and avg(g * xhat).
template <typename T>
__device__ void layer_norm_grad_row_dx(const T* dyr, const T* xr, const T* gamma, float mu, float rs, float avg_g,
                                       float avg_g_xhat, std::int64_t cols, T* dxr) {
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = (to_float(xr[c]) - mu) * rs;
    dxr[c] = from_float<T>(rs * (to_float(dyr[c]) * to_float(gamma[c]) - avg_g - xhat * avg_g_xhat));
  }
}

template <typename T>
struct LayerNormParamGradTerms {
  const T* dy;
  const T* x;
  const float* mean;
  const float* rstd;
  std::int64_t cols;
  __device__ float2 operator()(std::int64_t r, std::int64_t c) const {
    const float g = to_float(dy[r * cols + c]);
    return make_float2(g * (to_float(x[r * cols + c]) - mean[r]) * rstd[r], g);
  }
};

// dgamma += sum_rows dy * xhat, dbeta += sum_rows dy (column_sum's launch shape).
template <typename T>
__global__ void layer_norm_param_grad_kernel(LayerNormParamGradTerms<T> terms, std::int64_t rows, T* dgamma,
                                             T* dbeta) {
  const float2 total = column_sum(rows, terms.cols, terms);
  const std::int64_t c = static_cast<std::int64_t>(blockIdx.x) * kColumnSumWidth + threadIdx.x;
  if (threadIdx.y == 0 && c < terms.cols) {
    dgamma[c] = from_float<T>(to_float(dgamma[c]) + total.x);
    dbeta[c] = from_float<T>(to_float(dbeta[c]) + total.y);
  }
}

}  // namespace tandem::kernels::cuda::detail
