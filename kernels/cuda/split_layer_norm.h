#pragma once
// Layer normalization of rows whose columns are split over ranks (2D tensor parallelism), on a
// CUDA stream. Same contract as kernels/cpu/split_layer_norm.h: partial row statistics divided by
// full_cols (a sum all-reduce completes them), then the apply kernels. Storage of x, gamma, beta,
// y, dy, dx, dgamma, dbeta: float or bf16 (all the same); mean, var, rstd and sums stay float.
// dgamma and dbeta ACCUMULATE (+=), deterministically (no atomics).

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

#define TANDEM_SPLIT_LAYER_NORM(T)                                                                              \
  void layer_norm_partial_mean(const T* x, std::int64_t rows, std::int64_t cols, std::int64_t full_cols,       \
                               float* mean, cudaStream_t stream);                                               \
  void layer_norm_partial_var(const T* x, const float* mean, std::int64_t rows, std::int64_t cols,             \
                              std::int64_t full_cols, float* var, cudaStream_t stream);                         \
  void layer_norm_apply(const T* x, const T* gamma, const T* beta, const float* mean, const float* var,        \
                        std::int64_t rows, std::int64_t cols, float eps, T* y, float* rstd, cudaStream_t stream);  \
  void layer_norm_bwd_partial_sums(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, \
                                   std::int64_t rows, std::int64_t cols, std::int64_t full_cols, float* sums,    \
                                   cudaStream_t stream);                                                        \
  void layer_norm_bwd_apply(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd,     \
                            const float* sums, std::int64_t rows, std::int64_t cols, T* dx, T* dgamma, T* dbeta, \
                            cudaStream_t stream);
TANDEM_SPLIT_LAYER_NORM(float)
TANDEM_SPLIT_LAYER_NORM(__nv_bfloat16)
#undef TANDEM_SPLIT_LAYER_NORM

}  // namespace tandem::kernels::cuda
