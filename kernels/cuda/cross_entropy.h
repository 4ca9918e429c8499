#pragma once
// Vocab-parallel softmax cross-entropy on a CUDA stream, in the pieces that sit between the
// all-reduces. Same contract as kernels/cpu/cross_entropy.h:
//   1. cross_entropy_local_max       max[i] = max_c logits[i,c]                 -> all-reduce MAX
//   2. cross_entropy_local_sum_exp   sum_exp[i] = sum_c exp(logits[i,c] - global_max[i]) -> SUM
//   3. cross_entropy_target_logit    logits[i, targets[i] - vocab_offset] in shard, else 0 -> SUM
//   4. cross_entropy_loss            loss[i] = log(sum_exp[i]) + max[i] - target_logit[i]
//   5. cross_entropy_backward        dlogits = scale * (softmax - onehot(target in shard)),
//                                    OVERWRITTEN
// logits [n, v] are this shard's vocabulary columns [vocab_offset, vocab_offset + v); targets [n]
// are global int32 token ids on the device.
//
// Storage: logits and dlogits are float or bf16; max, sum_exp, target_logit and loss are float.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void cross_entropy_local_max(const float* logits, std::int64_t n, std::int64_t v, float* max,
                             cudaStream_t stream);
void cross_entropy_local_max(const __nv_bfloat16* logits, std::int64_t n, std::int64_t v,
                             float* max, cudaStream_t stream);

void cross_entropy_local_sum_exp(const float* logits, std::int64_t n, std::int64_t v,
                                 const float* global_max, float* sum_exp, cudaStream_t stream);
void cross_entropy_local_sum_exp(const __nv_bfloat16* logits, std::int64_t n, std::int64_t v,
                                 const float* global_max, float* sum_exp, cudaStream_t stream);

void cross_entropy_target_logit(const float* logits, std::int64_t n, std::int64_t v,
                                const std::int32_t* targets, std::int64_t vocab_offset,
                                float* target_logit, cudaStream_t stream);
void cross_entropy_target_logit(const __nv_bfloat16* logits, std::int64_t n, std::int64_t v,
                                const std::int32_t* targets, std::int64_t vocab_offset,
                                float* target_logit, cudaStream_t stream);

void cross_entropy_loss(const float* global_max, const float* global_sum_exp,
                        const float* global_target_logit, std::int64_t n, float* loss,
                        cudaStream_t stream);

void cross_entropy_backward(const float* logits, std::int64_t n, std::int64_t v,
                            const std::int32_t* targets, std::int64_t vocab_offset,
                            const float* global_max, const float* global_sum_exp, float scale,
                            float* dlogits, cudaStream_t stream);
void cross_entropy_backward(const __nv_bfloat16* logits, std::int64_t n, std::int64_t v,
                            const std::int32_t* targets, std::int64_t vocab_offset,
                            const float* global_max, const float* global_sum_exp, float scale,
                            __nv_bfloat16* dlogits, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
