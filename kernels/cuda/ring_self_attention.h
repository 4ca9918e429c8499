#pragma once
// Colossal-AI's ring self-attention step kernels on a CUDA stream: the contract of
// kernels/cpu/ring_self_attention.h (the same layouts, shapes and `block` meaning).
//
// Storage: every buffer is T (float or bf16), arithmetic float. One thread per output element
// (per row for the softmax and its backward), streaming over the dot product: simple and not
// tiled (Colossal-AI runs these as torch.matmul, i.e. cuBLAS batched GEMMs), so a stand-in for
// the numerics, not for the speed. Throws std::runtime_error when a launch fails.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "kernels/cpu/ring_self_attention.h"

namespace tandem::kernels::cuda {

using cpu::RingSelfShape;

template <class T>
void ring_self_pack(const T* qkv, const RingSelfShape& s, T* k, T* v, cudaStream_t stream);
template <class T>
void ring_self_scores(const T* q, std::int64_t q_ld, const T* k, std::int64_t k_ld, const RingSelfShape& s, T* scores,
                      cudaStream_t stream);
template <class T>
void ring_self_softmax(const T* scores, const RingSelfShape& s, T* probs, cudaStream_t stream);
template <class T>
void ring_self_context(const T* probs, const T* v, std::int64_t v_ld, const RingSelfShape& s, bool accumulate, T* ctx,
                       cudaStream_t stream);
template <class T>
void ring_self_grad_v(const T* probs, const T* dctx, const RingSelfShape& s, T* dv_full, cudaStream_t stream);
template <class T>
void ring_self_grad_probs(const T* dctx, const T* v, std::int64_t v_ld, const RingSelfShape& s, T* dprobs,
                          cudaStream_t stream);
template <class T>
void ring_self_softmax_backward(const T* probs, const T* dprobs, const RingSelfShape& s, T* dscores,
                                cudaStream_t stream);
template <class T>
void ring_self_grad_k(const T* dscores, const T* q, std::int64_t q_ld, const RingSelfShape& s, T* dk_full,
                      cudaStream_t stream);
template <class T>
void ring_self_grad_q(const T* dscores, const T* k, std::int64_t k_ld, const RingSelfShape& s, bool accumulate, T* dq,
                      std::int64_t dq_ld, cudaStream_t stream);
template <class T>
void ring_self_unpack(const T* dk_full, const T* dv_full, const RingSelfShape& s, T* dqkv, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
