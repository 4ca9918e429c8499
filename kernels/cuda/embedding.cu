#include "kernels/cuda/detail/check.h"
#include "kernels/cuda/detail/convert.cuh"
#include "kernels/cuda/detail/grid.h"
#include "kernels/cuda/embedding.h"

namespace tandem::kernels::cuda {
namespace {

using detail::from_float;
using detail::to_float;

__device__ __forceinline__ void atomic_add(float* address, float value) {
  atomicAdd(address, value);
}
__device__ __forceinline__ void atomic_add(__nv_bfloat16* address, float value) {
  atomicAdd(address, __float2bfloat16(value));
}

// One block per token.
template <typename T>
__global__ void forward_kernel(const std::int32_t* tokens, const T* table, std::int64_t rows,
                               std::int64_t cols, std::int64_t row_offset, T* out) {
  const std::int64_t i = blockIdx.x;
  const std::int64_t local = static_cast<std::int64_t>(tokens[i]) - row_offset;
  const bool in_shard = local >= 0 && local < rows;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    out[i * cols + c] = in_shard ? table[local * cols + c] : from_float<T>(0.0f);
  }
}

template <typename T>
__global__ void backward_kernel(const std::int32_t* tokens, const T* dout, std::int64_t rows,
                                std::int64_t cols, std::int64_t row_offset, T* dtable) {
  const std::int64_t i = blockIdx.x;
  const std::int64_t local = static_cast<std::int64_t>(tokens[i]) - row_offset;
  if (local < 0 || local >= rows) return;
  for (std::int64_t c = threadIdx.x; c < cols; c += blockDim.x) {
    atomic_add(dtable + local * cols + c, to_float(dout[i * cols + c]));
  }
}

template <typename T>
void forward(const std::int32_t* tokens, std::int64_t n, const T* table, std::int64_t rows,
             std::int64_t cols, std::int64_t row_offset, T* out, cudaStream_t stream) {
  if (n == 0 || cols == 0) return;
  forward_kernel<<<detail::to_int(n, "embedding_forward n"), detail::kBlock, 0, stream>>>(
      tokens, table, rows, cols, row_offset, out);
  detail::check_launch("embedding_forward");
}

template <typename T>
void backward(const std::int32_t* tokens, std::int64_t n, const T* dout, std::int64_t rows,
              std::int64_t cols, std::int64_t row_offset, T* dtable, cudaStream_t stream) {
  if (n == 0 || cols == 0) return;
  backward_kernel<<<detail::to_int(n, "embedding_backward n"), detail::kBlock, 0, stream>>>(
      tokens, dout, rows, cols, row_offset, dtable);
  detail::check_launch("embedding_backward");
}

}  // namespace

void embedding_forward(const std::int32_t* tokens, std::int64_t n, const float* table,
                       std::int64_t rows, std::int64_t cols, std::int64_t row_offset, float* out,
                       cudaStream_t stream) {
  forward(tokens, n, table, rows, cols, row_offset, out, stream);
}

void embedding_forward(const std::int32_t* tokens, std::int64_t n, const __nv_bfloat16* table,
                       std::int64_t rows, std::int64_t cols, std::int64_t row_offset,
                       __nv_bfloat16* out, cudaStream_t stream) {
  forward(tokens, n, table, rows, cols, row_offset, out, stream);
}

void embedding_backward(const std::int32_t* tokens, std::int64_t n, const float* dout,
                        std::int64_t rows, std::int64_t cols, std::int64_t row_offset,
                        float* dtable, cudaStream_t stream) {
  backward(tokens, n, dout, rows, cols, row_offset, dtable, stream);
}

void embedding_backward(const std::int32_t* tokens, std::int64_t n, const __nv_bfloat16* dout,
                        std::int64_t rows, std::int64_t cols, std::int64_t row_offset,
                        __nv_bfloat16* dtable, cudaStream_t stream) {
  backward(tokens, n, dout, rows, cols, row_offset, dtable, stream);
}

}  // namespace tandem::kernels::cuda
