#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/detail/row_reduction.cuh"

namespace tandem::kernels::cuda {
namespace {

using namespace detail;  // row_reduction.cuh: to_float, from_float, reduce_row, Sum, Max

// One block per row for the reductions over the vocabulary.
template <typename T>
__global__ void local_max_kernel(const T* logits, std::int64_t v, float* max) {
  const std::int64_t i = blockIdx.x;
  const float m = reduce_row(v, Max{}, [&](std::int64_t c) { return to_float(logits[i * v + c]); });
  if (threadIdx.x == 0) max[i] = m;
}

template <typename T>
__global__ void local_sum_exp_kernel(const T* logits, std::int64_t v, const float* global_max,
                                     float* sum_exp) {
  const std::int64_t i = blockIdx.x;
  const float m = global_max[i];
  const float sum =
      reduce_row(v, Sum{}, [&](std::int64_t c) { return expf(to_float(logits[i * v + c]) - m); });
  if (threadIdx.x == 0) sum_exp[i] = sum;
}

// One thread per row.
template <typename T>
__global__ void target_logit_kernel(const T* logits, std::int64_t n, std::int64_t v,
                                    const std::int32_t* targets, std::int64_t vocab_offset,
                                    float* target_logit) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    const std::int64_t local = static_cast<std::int64_t>(targets[i]) - vocab_offset;
    target_logit[i] = local >= 0 && local < v ? to_float(logits[i * v + local]) : 0.0f;
  }
}

__global__ void loss_kernel(const float* global_max, const float* global_sum_exp,
                            const float* global_target_logit, std::int64_t n, float* loss) {
  for (std::int64_t i = static_cast<std::int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += static_cast<std::int64_t>(gridDim.x) * blockDim.x) {
    loss[i] = logf(global_sum_exp[i]) + global_max[i] - global_target_logit[i];
  }
}

// One block per row.
template <typename T>
__global__ void backward_kernel(const T* logits, std::int64_t v, const std::int32_t* targets,
                                std::int64_t vocab_offset, const float* global_max,
                                const float* global_sum_exp, float scale, T* dlogits) {
  const std::int64_t i = blockIdx.x;
  const float m = global_max[i];
  const float factor = scale / global_sum_exp[i];
  const std::int64_t local = static_cast<std::int64_t>(targets[i]) - vocab_offset;
  for (std::int64_t c = threadIdx.x; c < v; c += blockDim.x) {
    const float p_scaled = factor * expf(to_float(logits[i * v + c]) - m);
    dlogits[i * v + c] = from_float<T>(c == local ? p_scaled - scale : p_scaled);
  }
}

template <typename T>
void local_max(const T* logits, std::int64_t n, std::int64_t v, float* max, cudaStream_t stream) {
  if (n == 0) return;
  local_max_kernel<<<detail::to_int(n, "cross_entropy_local_max n"), detail::kBlock, 0, stream>>>(
      logits, v, max);
  detail::check_launch("cross_entropy_local_max");
}

template <typename T>
void local_sum_exp(const T* logits, std::int64_t n, std::int64_t v, const float* global_max,
                   float* sum_exp, cudaStream_t stream) {
  if (n == 0) return;
  local_sum_exp_kernel<<<detail::to_int(n, "cross_entropy_local_sum_exp n"), detail::kBlock, 0,
                         stream>>>(logits, v, global_max, sum_exp);
  detail::check_launch("cross_entropy_local_sum_exp");
}

template <typename T>
void target_logit(const T* logits, std::int64_t n, std::int64_t v, const std::int32_t* targets,
                  std::int64_t vocab_offset, float* out, cudaStream_t stream) {
  if (n == 0) return;
  target_logit_kernel<<<detail::elementwise_blocks(n), detail::kBlock, 0, stream>>>(
      logits, n, v, targets, vocab_offset, out);
  detail::check_launch("cross_entropy_target_logit");
}

template <typename T>
void backward(const T* logits, std::int64_t n, std::int64_t v, const std::int32_t* targets,
              std::int64_t vocab_offset, const float* global_max, const float* global_sum_exp,
              float scale, T* dlogits, cudaStream_t stream) {
  if (n == 0 || v == 0) return;
  backward_kernel<<<detail::to_int(n, "cross_entropy_backward n"), detail::kBlock, 0, stream>>>(
      logits, v, targets, vocab_offset, global_max, global_sum_exp, scale, dlogits);
  detail::check_launch("cross_entropy_backward");
}

}  // namespace

void cross_entropy_local_max(const float* logits, std::int64_t n, std::int64_t v, float* max,
                             cudaStream_t stream) {
  local_max(logits, n, v, max, stream);
}

void cross_entropy_local_max(const __nv_bfloat16* logits, std::int64_t n, std::int64_t v,
                             float* max, cudaStream_t stream) {
  local_max(logits, n, v, max, stream);
}

void cross_entropy_local_sum_exp(const float* logits, std::int64_t n, std::int64_t v,
                                 const float* global_max, float* sum_exp, cudaStream_t stream) {
  local_sum_exp(logits, n, v, global_max, sum_exp, stream);
}

void cross_entropy_local_sum_exp(const __nv_bfloat16* logits, std::int64_t n, std::int64_t v,
                                 const float* global_max, float* sum_exp, cudaStream_t stream) {
  local_sum_exp(logits, n, v, global_max, sum_exp, stream);
}

void cross_entropy_target_logit(const float* logits, std::int64_t n, std::int64_t v,
                                const std::int32_t* targets, std::int64_t vocab_offset,
                                float* target_logit_out, cudaStream_t stream) {
  target_logit(logits, n, v, targets, vocab_offset, target_logit_out, stream);
}

void cross_entropy_target_logit(const __nv_bfloat16* logits, std::int64_t n, std::int64_t v,
                                const std::int32_t* targets, std::int64_t vocab_offset,
                                float* target_logit_out, cudaStream_t stream) {
  target_logit(logits, n, v, targets, vocab_offset, target_logit_out, stream);
}

void cross_entropy_loss(const float* global_max, const float* global_sum_exp,
                        const float* global_target_logit, std::int64_t n, float* loss,
                        cudaStream_t stream) {
  if (n == 0) return;
  loss_kernel<<<detail::elementwise_blocks(n), detail::kBlock, 0, stream>>>(
      global_max, global_sum_exp, global_target_logit, n, loss);
  detail::check_launch("cross_entropy_loss");
}

void cross_entropy_backward(const float* logits, std::int64_t n, std::int64_t v,
                            const std::int32_t* targets, std::int64_t vocab_offset,
                            const float* global_max, const float* global_sum_exp, float scale,
                            float* dlogits, cudaStream_t stream) {
  backward(logits, n, v, targets, vocab_offset, global_max, global_sum_exp, scale, dlogits, stream);
}

void cross_entropy_backward(const __nv_bfloat16* logits, std::int64_t n, std::int64_t v,
                            const std::int32_t* targets, std::int64_t vocab_offset,
                            const float* global_max, const float* global_sum_exp, float scale,
                            __nv_bfloat16* dlogits, cudaStream_t stream) {
  backward(logits, n, v, targets, vocab_offset, global_max, global_sum_exp, scale, dlogits, stream);
}

}  // namespace tandem::kernels::cuda
