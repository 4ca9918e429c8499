#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/detail/convert.cuh"
#include "kernels/cuda/detail/grid.h"
#include "kernels/cuda/swiglu.h"

namespace tandem::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;

// One thread per output element (r, j) of the [rows, f] result.
template <typename T>
__global__ void forward_kernel(const T* x, std::int64_t rows, std::int64_t f, T* y) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < rows * f; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t gate = i / f * 2 * f + i % f;
    const float a = to_float(x[gate]);
    y[i] = from_float<T>(a / (1.0f + expf(-a)) * to_float(x[gate + f]));
  }
}

template <typename T>
__global__ void backward_kernel(const T* x, const T* dy, std::int64_t rows, std::int64_t f, T* dx) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
       i < rows * f; i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t gate = i / f * 2 * f + i % f;
    const float a = to_float(x[gate]);
    const float lin = to_float(x[gate + f]);
    const float g = to_float(dy[i]);
    const float sig = 1.0f / (1.0f + expf(-a));
    // silu'(a) = sigmoid(a) * (1 + a * (1 - sigmoid(a)))
    dx[gate] = from_float<T>(g * lin * sig * (1.0f + a * (1.0f - sig)));
    dx[gate + f] = from_float<T>(g * a * sig);
  }
}

template <typename T>
void forward(const T* x, std::int64_t rows, std::int64_t f, T* y, cudaStream_t stream) {
  if (rows == 0 || f == 0) return;
  forward_kernel<<<detail::elementwise_blocks(rows * f), detail::kBlock, 0, stream>>>(x, rows, f,
                                                                                      y);
  detail::check_launch("swiglu_forward");
}

template <typename T>
void backward(const T* x, const T* dy, std::int64_t rows, std::int64_t f, T* dx,
              cudaStream_t stream) {
  if (rows == 0 || f == 0) return;
  backward_kernel<<<detail::elementwise_blocks(rows * f), detail::kBlock, 0, stream>>>(x, dy, rows,
                                                                                       f, dx);
  detail::check_launch("swiglu_backward");
}

}  // namespace

void swiglu_forward(const float* x, std::int64_t rows, std::int64_t f, float* y,
                    cudaStream_t stream) {
  forward(x, rows, f, y, stream);
}

void swiglu_forward(const __nv_bfloat16* x, std::int64_t rows, std::int64_t f, __nv_bfloat16* y,
                    cudaStream_t stream) {
  forward(x, rows, f, y, stream);
}

void swiglu_backward(const float* x, const float* dy, std::int64_t rows, std::int64_t f, float* dx,
                     cudaStream_t stream) {
  backward(x, dy, rows, f, dx, stream);
}

void swiglu_backward(const __nv_bfloat16* x, const __nv_bfloat16* dy, std::int64_t rows,
                     std::int64_t f, __nv_bfloat16* dx, cudaStream_t stream) {
  backward(x, dy, rows, f, dx, stream);
}

}  // namespace tandem::kernels::cuda
