#pragma once
// Vocab-parallel softmax cross-entropy on the CPU (float32), in the pieces that sit between the
// all-reduces of a tensor-parallel loss (Megatron-LM's vocab-parallel cross-entropy):
//
//   1. cross_entropy_local_max       max[i] = max_c logits[i,c]            -> all-reduce MAX
//   2. cross_entropy_local_sum_exp   sum_exp[i] = sum_c exp(logits[i,c] - global_max[i])
//                                                                          -> all-reduce SUM
//   3. cross_entropy_target_logit    target_logit[i] = logits[i, targets[i] - vocab_offset] when
//                                    the target lies in this shard, else 0 -> all-reduce SUM
//   4. cross_entropy_loss            loss[i] = log(sum_exp[i]) + max[i] - target_logit[i]
//   5. cross_entropy_backward        dlogits = scale * (softmax(logits) - onehot(target)), the
//                                    one-hot restricted to this shard; dlogits is OVERWRITTEN
//
// logits [n, v] are this shard's columns [vocab_offset, vocab_offset + v) of the vocabulary;
// targets [n] are global token ids; max, sum_exp, target_logit and loss are [n]. With one shard
// (vocab_offset = 0, v = vocabulary) the pieces compose plain cross-entropy. scale is typically
// 1 / (number of tokens averaged over) times the loss scale.

#include <cstdint>

namespace tandem::kernels::cpu {

void cross_entropy_local_max(const float* logits, std::int64_t n, std::int64_t v, float* max);

void cross_entropy_local_sum_exp(const float* logits, std::int64_t n, std::int64_t v,
                                 const float* global_max, float* sum_exp);

void cross_entropy_target_logit(const float* logits, std::int64_t n, std::int64_t v,
                                const std::int32_t* targets, std::int64_t vocab_offset,
                                float* target_logit);

void cross_entropy_loss(const float* global_max, const float* global_sum_exp,
                        const float* global_target_logit, std::int64_t n, float* loss);

void cross_entropy_backward(const float* logits, std::int64_t n, std::int64_t v,
                            const std::int32_t* targets, std::int64_t vocab_offset,
                            const float* global_max, const float* global_sum_exp, float scale,
                            float* dlogits);

}  // namespace tandem::kernels::cpu
