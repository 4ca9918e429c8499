#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/detail/convert.cuh"
#include "kernels/cuda/detail/grid.h"
#include "kernels/cuda/elementwise.h"

namespace tandem::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;

template <typename T>
__global__ void add_kernel(const T* a, const T* b, T* out, std::int64_t n) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    out[i] = from_float<T>(to_float(a[i]) + to_float(b[i]));
  }
}

template <typename T>
__global__ void scale_kernel(T* x, float alpha, std::int64_t n) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    x[i] = from_float<T>(alpha * to_float(x[i]));
  }
}

template <typename T>
void launch_add(const T* a, const T* b, T* out, std::int64_t n, cudaStream_t stream,
                const char* what) {
  if (n == 0) return;
  add_kernel<<<detail::elementwise_blocks(n), detail::kBlock, 0, stream>>>(a, b, out, n);
  detail::check_launch(what);
}

template <typename T>
void launch_scale(T* x, float alpha, std::int64_t n, cudaStream_t stream) {
  if (n == 0) return;
  scale_kernel<<<detail::elementwise_blocks(n), detail::kBlock, 0, stream>>>(x, alpha, n);
  detail::check_launch("scale");
}

}  // namespace

void add(const float* a, const float* b, float* out, std::int64_t n, cudaStream_t stream) {
  launch_add(a, b, out, n, stream, "add");
}

void add(const __nv_bfloat16* a, const __nv_bfloat16* b, __nv_bfloat16* out, std::int64_t n,
         cudaStream_t stream) {
  launch_add(a, b, out, n, stream, "add");
}

void scale(float* x, float alpha, std::int64_t n, cudaStream_t stream) {
  launch_scale(x, alpha, n, stream);
}

void scale(__nv_bfloat16* x, float alpha, std::int64_t n, cudaStream_t stream) {
  launch_scale(x, alpha, n, stream);
}

// y += x is the add y = x + y, written in place.
void accumulate(const float* x, float* y, std::int64_t n, cudaStream_t stream) {
  launch_add(x, static_cast<const float*>(y), y, n, stream, "accumulate");
}

void accumulate(const __nv_bfloat16* x, __nv_bfloat16* y, std::int64_t n, cudaStream_t stream) {
  launch_add(x, static_cast<const __nv_bfloat16*>(y), y, n, stream, "accumulate");
}

}  // namespace tandem::kernels::cuda
