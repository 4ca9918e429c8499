#pragma once
// Ring attention's blockwise kernels on a CUDA stream: the contract of kernels/cpu/ring_attention.h
// (modes 0 local causal, 1 keys of an earlier rank, 2 of a later one; forward merged by the
// log-sum-exp into out and lse, or written; backward accumulating dq, dk, dv).
//
// Storage: q, k, v, out, dout and dq are float or bf16 (all the same); lse and the dK/dV block
// (dk, dv, the fp32 sums that travel the ring) are float; arithmetic is float. One thread per
// (sample, head, query row), streaming over the block's keys: simple and not tiled (a stand-in
// for FlashAttention's varlen kernels, which Transformer Engine calls), so memory-bound; dk and dv
// are summed with float atomics. head_dim at most 256.
// Throws std::invalid_argument on bad shapes, std::runtime_error when a launch fails.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/ring_attention.h"

namespace tandem::kernels::cuda {

template <class T>
void ring_attention_forward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                            std::int64_t v_ld, const cpu::RingBlock& s, bool merge, T* out, float* lse,
                            cudaStream_t stream);

template <class T>
void ring_attention_backward(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const T* v,
                             std::int64_t v_ld, const T* out, const T* dout, const float* lse,
                             const cpu::RingBlock& s, T* dq, std::int64_t dq_ld, float* dk, std::int64_t dk_ld,
                             float* dv, std::int64_t dv_ld, cudaStream_t stream);

// kv [rows, 2 kv_cols] <- the K and V columns of qkv [rows, q_cols + 2 kv_cols] (same type).
template <class T>
void kv_pack(const T* qkv, std::int64_t rows, std::int64_t q_cols, std::int64_t kv_cols, T* kv, cudaStream_t stream);
// The K and V columns of dqkv <- dkv [rows, 2 kv_cols] (float), rounded to T.
template <class T>
void kv_unpack(const float* dkv, std::int64_t rows, std::int64_t q_cols, std::int64_t kv_cols, T* dqkv,
               cudaStream_t stream);

}  // namespace tandem::kernels::cuda
