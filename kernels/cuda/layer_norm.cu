#include "kernels/cuda/detail/layer_norm_grad.cuh"
#include "kernels/cuda/layer_norm.h"

namespace tandem::kernels::cuda {
namespace {

using namespace detail;  // row_reduction.cuh: to_float, from_float, reduce_row, Sum, Max; layer_norm_grad.cuh

// One block per row.
template <typename T>
__global__ void forward_kernel(const T* x, const T* gamma, const T* beta, std::int64_t cols,
                               float eps, T* y, float* mean, float* rstd) {
  const std::int64_t r = blockIdx.x;
  const T* xr = x + r * cols;
  T* yr = y + r * cols;
  const float mu = reduce_row(cols, Sum{}, [&](std::int64_t c) { return to_float(xr[c]); }) /
                   static_cast<float>(cols);
  const float sq = reduce_row(cols, Sum{}, [&](std::int64_t c) {
    const float d = to_float(xr[c]) - mu;
    return d * d;
  });
  const float rs = rsqrtf(sq / static_cast<float>(cols) + eps);
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    yr[c] = from_float<T>((to_float(xr[c]) - mu) * rs * to_float(gamma[c]) + to_float(beta[c]));
  }
  if (threadIdx.x == 0) {
    mean[r] = mu;
    rstd[r] = rs;
  }
}

// One block per row: dx = rstd * (g - avg(g) - xhat * avg(g * xhat)), g = dy * gamma.
template <typename T>
__global__ void input_grad_kernel(const T* dy, const T* x, const T* gamma, const float* mean,
                                  const float* rstd, std::int64_t cols, T* dx) {
  const std::int64_t r = blockIdx.x;
  const T* xr = x + r * cols;
  const T* dyr = dy + r * cols;
  const float mu = mean[r];
  const float rs = rstd[r];
  const float2 sums = layer_norm_grad_row_sums(dyr, xr, gamma, mu, rs, cols);
  const float avg_g = sums.x / static_cast<float>(cols);
  const float avg_g_xhat = sums.y / static_cast<float>(cols);
  layer_norm_grad_row_dx(dyr, xr, gamma, mu, rs, avg_g, avg_g_xhat, cols, dx + r * cols);
}

template <typename T>
void forward(const T* x, const T* gamma, const T* beta, std::int64_t rows, std::int64_t cols,
             float eps, T* y, float* mean, float* rstd, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  forward_kernel<<<detail::to_int(rows, "layer_norm_forward rows"), detail::kBlock, 0, stream>>>(
      x, gamma, beta, cols, eps, y, mean, rstd);
  detail::check_launch("layer_norm_forward");
}

template <typename T>
void backward(const T* dy, const T* x, const T* gamma, const float* mean, const float* rstd,
              std::int64_t rows, std::int64_t cols, T* dx, T* dgamma, T* dbeta,
              cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  input_grad_kernel<<<detail::to_int(rows, "layer_norm_backward rows"), detail::kBlock, 0,
                      stream>>>(dy, x, gamma, mean, rstd, cols, dx);
  detail::check_launch("layer_norm_backward (dx)");
  const dim3 block(detail::kColumnSumWidth, detail::kColumnSumDepth);
  const int blocks = detail::to_int((cols + detail::kColumnSumWidth - 1) / detail::kColumnSumWidth,
                                    "layer_norm_backward cols");
  layer_norm_param_grad_kernel<<<blocks, block, 0, stream>>>(
      LayerNormParamGradTerms<T>{dy, x, mean, rstd, cols}, rows, dgamma, dbeta);
  detail::check_launch("layer_norm_backward (dgamma, dbeta)");
}

}  // namespace

void layer_norm_forward(const float* x, const float* gamma, const float* beta, std::int64_t rows,
                        std::int64_t cols, float eps, float* y, float* mean, float* rstd,
                        cudaStream_t stream) {
  forward(x, gamma, beta, rows, cols, eps, y, mean, rstd, stream);
}

void layer_norm_forward(const __nv_bfloat16* x, const __nv_bfloat16* gamma,
                        const __nv_bfloat16* beta, std::int64_t rows, std::int64_t cols, float eps,
                        __nv_bfloat16* y, float* mean, float* rstd, cudaStream_t stream) {
  forward(x, gamma, beta, rows, cols, eps, y, mean, rstd, stream);
}

void layer_norm_backward(const float* dy, const float* x, const float* gamma, const float* mean,
                         const float* rstd, std::int64_t rows, std::int64_t cols, float* dx,
                         float* dgamma, float* dbeta, cudaStream_t stream) {
  backward(dy, x, gamma, mean, rstd, rows, cols, dx, dgamma, dbeta, stream);
}

void layer_norm_backward(const __nv_bfloat16* dy, const __nv_bfloat16* x,
                         const __nv_bfloat16* gamma, const float* mean, const float* rstd,
                         std::int64_t rows, std::int64_t cols, __nv_bfloat16* dx,
                         __nv_bfloat16* dgamma, __nv_bfloat16* dbeta, cudaStream_t stream) {
  backward(dy, x, gamma, mean, rstd, rows, cols, dx, dgamma, dbeta, stream);
}

}  // namespace tandem::kernels::cuda
