#include "kernels/cuda/detail/layer_norm_grad.cuh"
#include "kernels/cuda/split_layer_norm.h"

namespace tandem::kernels::cuda {
namespace {

using namespace detail;  // row_reduction.cuh: to_float, from_float, reduce_row, Sum; layer_norm_grad.cuh

// One block per row for the row kernels.
template <typename T>
__global__ void partial_mean_kernel(const T* x, std::int64_t cols, float inv_full, float* mean) {
  const std::int64_t r = blockIdx.x;
  const float s = reduce_row(cols, Sum{}, [&](std::int64_t c) { return to_float(x[r * cols + c]); });
  if (threadIdx.x == 0) mean[r] = s * inv_full;
}

template <typename T>
__global__ void partial_var_kernel(const T* x, const float* mean, std::int64_t cols, float inv_full, float* var) {
  const std::int64_t r = blockIdx.x;
  const float mu = mean[r];
  const float s = reduce_row(cols, Sum{}, [&](std::int64_t c) {
    const float d = to_float(x[r * cols + c]) - mu;
    return d * d;
  });
  if (threadIdx.x == 0) var[r] = s * inv_full;
}

template <typename T>
__global__ void apply_kernel(const T* x, const T* gamma, const T* beta, const float* mean, const float* var,
                             std::int64_t cols, float eps, T* y, float* rstd) {
  const std::int64_t r = blockIdx.x;
  const float mu = mean[r], rs = rsqrtf(var[r] + eps);
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x)
    y[r * cols + c] = from_float<T>((to_float(x[r * cols + c]) - mu) * rs * to_float(gamma[c]) + to_float(beta[c]));
  if (threadIdx.x == 0) rstd[r] = rs;
}

template <typename T>
__global__ void bwd_sums_kernel(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd,
                                std::int64_t cols, float inv_full, float* sums) {
  const std::int64_t r = blockIdx.x;
  const float mu = mean[r], rs = rstd[r];
  const float2 s = layer_norm_grad_row_sums(dy + r * cols, x + r * cols, gamma, mu, rs, cols);
  if (threadIdx.x == 0) {
    sums[2 * r] = s.x * inv_full;
    sums[2 * r + 1] = s.y * inv_full;
  }
}

template <typename T>
__global__ void bwd_dx_kernel(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd,
                              const float* sums, std::int64_t cols, T* dx) {
  const std::int64_t r = blockIdx.x;
  layer_norm_grad_row_dx(dy + r * cols, x + r * cols, gamma, mean[r], rstd[r], sums[2 * r], sums[2 * r + 1], cols,
                         dx + r * cols);
}

int row_blocks(std::int64_t rows, const char* what) { return to_int(rows, what); }

}  // namespace

#define TANDEM_SPLIT_LAYER_NORM(T)                                                                                 \
  void layer_norm_partial_mean(const T* x, std::int64_t rows, std::int64_t cols, std::int64_t full_cols,          \
                               float* mean, cudaStream_t stream) {                                                 \
    if (rows == 0) return;                                                                                         \
    partial_mean_kernel<<<row_blocks(rows, "layer_norm_partial_mean rows"), kBlock, 0, stream>>>(                  \
        x, cols, 1.0f / static_cast<float>(full_cols), mean);                                                      \
    check_launch("layer_norm_partial_mean");                                                                       \
  }                                                                                                                \
  void layer_norm_partial_var(const T* x, const float* mean, std::int64_t rows, std::int64_t cols,                \
                              std::int64_t full_cols, float* var, cudaStream_t stream) {                           \
    if (rows == 0) return;                                                                                         \
    partial_var_kernel<<<row_blocks(rows, "layer_norm_partial_var rows"), kBlock, 0, stream>>>(                    \
        x, mean, cols, 1.0f / static_cast<float>(full_cols), var);                                                 \
    check_launch("layer_norm_partial_var");                                                                        \
  }                                                                                                                \
  void layer_norm_apply(const T* x, const T* gamma, const T* beta, const float* mean, const float* var,           \
                        std::int64_t rows, std::int64_t cols, float eps, T* y, float* rstd, cudaStream_t stream) { \
    if (rows == 0) return;                                                                                         \
    apply_kernel<<<row_blocks(rows, "layer_norm_apply rows"), kBlock, 0, stream>>>(x, gamma, beta, mean, var,    \
                                                                                    cols, eps, y, rstd);           \
    check_launch("layer_norm_apply");                                                                              \
  }                                                                                                                \
  void layer_norm_bwd_partial_sums(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd, \
                                   std::int64_t rows, std::int64_t cols, std::int64_t full_cols, float* sums,     \
                                   cudaStream_t stream) {                                                          \
    if (rows == 0) return;                                                                                         \
    bwd_sums_kernel<<<row_blocks(rows, "layer_norm_bwd_partial_sums rows"), kBlock, 0, stream>>>(                  \
        dy, x, gamma, mean, rstd, cols, 1.0f / static_cast<float>(full_cols), sums);                               \
    check_launch("layer_norm_bwd_partial_sums");                                                                   \
  }                                                                                                                \
  void layer_norm_bwd_apply(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd,        \
                            const float* sums, std::int64_t rows, std::int64_t cols, T* dx, T* dgamma, T* dbeta,  \
                            cudaStream_t stream) {                                                                 \
    if (rows == 0 || cols == 0) return;                                                                            \
    bwd_dx_kernel<<<row_blocks(rows, "layer_norm_bwd_apply rows"), kBlock, 0, stream>>>(dy, x, gamma, mean, rstd, \
                                                                                         sums, cols, dx);          \
    check_launch("layer_norm_bwd_apply (dx)");                                                                     \
    const dim3 block(kColumnSumWidth, kColumnSumDepth);                                                            \
    const int blocks = to_int((cols + kColumnSumWidth - 1) / kColumnSumWidth, "layer_norm_bwd_apply cols");       \
    layer_norm_param_grad_kernel<<<blocks, block, 0, stream>>>(                                                   \
        LayerNormParamGradTerms<T>{dy, x, mean, rstd, cols}, rows, dgamma, dbeta);                                 \
    check_launch("layer_norm_bwd_apply (dgamma, dbeta)");                                                          \
  }
TANDEM_SPLIT_LAYER_NORM(float)
TANDEM_SPLIT_LAYER_NORM(__nv_bfloat16)
#undef TANDEM_SPLIT_LAYER_NORM

}  // namespace tandem::kernels::cuda
