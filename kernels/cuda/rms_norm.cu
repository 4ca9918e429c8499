#include "kernels/cuda/detail/column_sum.cuh"
#include "kernels/cuda/detail/row_reduction.cuh"
#include "kernels/cuda/rms_norm.h"

namespace tandem::kernels::cuda {
namespace {

using namespace detail;  // row_reduction.cuh: to_float, from_float, reduce_row, Sum, Max

// One block per row.
template <typename T>
__global__ void forward_kernel(const T* x, const T* gamma, std::int64_t cols, float eps, T* y,
                               float* rstd) {
  const std::int64_t r = blockIdx.x;
  const T* xr = x + r * cols;
  const float sq = reduce_row(cols, Sum{}, [&](std::int64_t c) {
    const float v = to_float(xr[c]);
    return v * v;
  });
  const float rs = rsqrtf(sq / static_cast<float>(cols) + eps);
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    y[r * cols + c] = from_float<T>(to_float(xr[c]) * rs * to_float(gamma[c]));
  }
  if (threadIdx.x == 0) rstd[r] = rs;
}

// One block per row: dx = rstd * (g - xhat * avg(g * xhat)), xhat = x * rstd, g = dy * gamma.
template <typename T>
__global__ void input_grad_kernel(const T* dy, const T* x, const T* gamma, const float* rstd,
                                  std::int64_t cols, T* dx) {
  const std::int64_t r = blockIdx.x;
  const T* xr = x + r * cols;
  const T* dyr = dy + r * cols;
  const float rs = rstd[r];
  const float sum_g_xhat = reduce_row(cols, Sum{}, [&](std::int64_t c) {
    return to_float(dyr[c]) * to_float(gamma[c]) * to_float(xr[c]) * rs;
  });
  const float avg_g_xhat = sum_g_xhat / static_cast<float>(cols);
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    const float xhat = to_float(xr[c]) * rs;
    dx[r * cols + c] =
        from_float<T>(rs * (to_float(dyr[c]) * to_float(gamma[c]) - xhat * avg_g_xhat));
  }
}

template <typename T>
struct GammaGradTerms {
  const T* dy;
  const T* x;
  const float* rstd;
  std::int64_t cols;
  __device__ float2 operator()(std::int64_t r, std::int64_t c) const {
    return make_float2(to_float(dy[r * cols + c]) * to_float(x[r * cols + c]) * rstd[r], 0.0f);
  }
};

template <typename T>
__global__ void gamma_grad_kernel(GammaGradTerms<T> terms, std::int64_t rows, T* dgamma) {
  const float2 total = detail::column_sum(rows, terms.cols, terms);
  const std::int64_t c =
      static_cast<std::int64_t>(blockIdx.x) * detail::kColumnSumWidth + threadIdx.x;
  if (threadIdx.y == 0 && c < terms.cols) dgamma[c] = from_float<T>(to_float(dgamma[c]) + total.x);
}

template <typename T>
void forward(const T* x, const T* gamma, std::int64_t rows, std::int64_t cols, float eps, T* y,
             float* rstd, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  forward_kernel<<<detail::to_int(rows, "rms_norm_forward rows"), detail::kBlock, 0, stream>>>(
      x, gamma, cols, eps, y, rstd);
  detail::check_launch("rms_norm_forward");
}

template <typename T>
void backward(const T* dy, const T* x, const T* gamma, const float* rstd, std::int64_t rows,
              std::int64_t cols, T* dx, T* dgamma, cudaStream_t stream) {
  if (rows == 0 || cols == 0) return;
  input_grad_kernel<<<detail::to_int(rows, "rms_norm_backward rows"), detail::kBlock, 0, stream>>>(
      dy, x, gamma, rstd, cols, dx);
  detail::check_launch("rms_norm_backward (dx)");
  const dim3 block(detail::kColumnSumWidth, detail::kColumnSumDepth);
  const int blocks = detail::to_int((cols + detail::kColumnSumWidth - 1) / detail::kColumnSumWidth,
                                    "rms_norm_backward cols");
  gamma_grad_kernel<<<blocks, block, 0, stream>>>(GammaGradTerms<T>{dy, x, rstd, cols}, rows,
                                                  dgamma);
  detail::check_launch("rms_norm_backward (dgamma)");
}

}  // namespace

void rms_norm_forward(const float* x, const float* gamma, std::int64_t rows, std::int64_t cols,
                      float eps, float* y, float* rstd, cudaStream_t stream) {
  forward(x, gamma, rows, cols, eps, y, rstd, stream);
}

void rms_norm_forward(const __nv_bfloat16* x, const __nv_bfloat16* gamma, std::int64_t rows,
                      std::int64_t cols, float eps, __nv_bfloat16* y, float* rstd,
                      cudaStream_t stream) {
  forward(x, gamma, rows, cols, eps, y, rstd, stream);
}

void rms_norm_backward(const float* dy, const float* x, const float* gamma, const float* rstd,
                       std::int64_t rows, std::int64_t cols, float* dx, float* dgamma,
                       cudaStream_t stream) {
  backward(dy, x, gamma, rstd, rows, cols, dx, dgamma, stream);
}

void rms_norm_backward(const __nv_bfloat16* dy, const __nv_bfloat16* x, const __nv_bfloat16* gamma,
                       const float* rstd, std::int64_t rows, std::int64_t cols, __nv_bfloat16* dx,
                       __nv_bfloat16* dgamma, cudaStream_t stream) {
  backward(dy, x, gamma, rstd, rows, cols, dx, dgamma, stream);
}

}  // namespace tandem::kernels::cuda
