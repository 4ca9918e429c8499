#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/detail/convert.cuh"
#include "kernels/cuda/detail/grid.h"
#include "kernels/cuda/gelu.h"

namespace tandem::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;

constexpr float kSqrt2OverPi = 0.7978845608028654f;
constexpr float kCubic = 0.044715f;

template <typename T>
__global__ void forward_kernel(const T* x, T* y, std::int64_t n) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float a = to_float(x[i]);
    y[i] = from_float<T>(0.5f * a * (1.0f + tanhf(kSqrt2OverPi * (a + kCubic * a * a * a))));
  }
}

template <typename T>
__global__ void backward_kernel(const T* x, const T* dy, T* dx, std::int64_t n) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const float a = to_float(x[i]);
    const float t = tanhf(kSqrt2OverPi * (a + kCubic * a * a * a));
    const float du = kSqrt2OverPi * (1.0f + 3.0f * kCubic * a * a);
    dx[i] = from_float<T>(to_float(dy[i]) * (0.5f * (1.0f + t) + 0.5f * a * (1.0f - t * t) * du));
  }
}

template <typename T>
void forward(const T* x, T* y, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  forward_kernel<<<detail::elementwise_blocks(n), detail::kBlock, 0, stream>>>(x, y, n);
  detail::check_launch("gelu_forward");
}

template <typename T>
void backward(const T* x, const T* dy, T* dx, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  backward_kernel<<<detail::elementwise_blocks(n), detail::kBlock, 0, stream>>>(x, dy, dx, n);
  detail::check_launch("gelu_backward");
}

}  // namespace

void gelu_forward(const float* x, float* y, std::int64_t n, cudaStream_t stream) {
  forward(x, y, n, stream);
}

void gelu_forward(const __nv_bfloat16* x, __nv_bfloat16* y, std::int64_t n, cudaStream_t stream) {
  forward(x, y, n, stream);
}

void gelu_backward(const float* x, const float* dy, float* dx, std::int64_t n,
                   cudaStream_t stream) {
  backward(x, dy, dx, n, stream);
}

void gelu_backward(const __nv_bfloat16* x, const __nv_bfloat16* dy, __nv_bfloat16* dx,
                   std::int64_t n, cudaStream_t stream) {
  backward(x, dy, dx, n, stream);
}

}  // namespace tandem::kernels::cuda
