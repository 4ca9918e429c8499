#pragma once
// Vocab-parallel token embedding on a CUDA stream. Same contract as kernels/cpu/embedding.h: this
// rank holds vocabulary rows [row_offset, row_offset + rows) as table [rows, cols];
//   forward   out[i] = table[tokens[i] - row_offset] for in-shard tokens, zeros otherwise [n, cols]
//   backward  dtable[tokens[i] - row_offset] += dout[i] for in-shard tokens (ACCUMULATES)
// tokens [n] are int32 on the device.
//
// Storage: table, out, dout, dtable are float or bf16 (all the same). The backward adds with
// atomics (bf16 atomics need sm_70 or newer), so the order in which repeated tokens add up, and
// hence the last bits of their rows, can vary from run to run.

#include <cuda_bf16.h>
#include <cuda_runtime.h>

#include <cstdint>

namespace tandem::kernels::cuda {

void embedding_forward(const std::int32_t* tokens, std::int64_t n, const float* table,
                       std::int64_t rows, std::int64_t cols, std::int64_t row_offset, float* out,
                       cudaStream_t stream);
void embedding_forward(const std::int32_t* tokens, std::int64_t n, const __nv_bfloat16* table,
                       std::int64_t rows, std::int64_t cols, std::int64_t row_offset,
                       __nv_bfloat16* out, cudaStream_t stream);

void embedding_backward(const std::int32_t* tokens, std::int64_t n, const float* dout,
                        std::int64_t rows, std::int64_t cols, std::int64_t row_offset,
                        float* dtable, cudaStream_t stream);
void embedding_backward(const std::int32_t* tokens, std::int64_t n, const __nv_bfloat16* dout,
                        std::int64_t rows, std::int64_t cols, std::int64_t row_offset,
                        __nv_bfloat16* dtable, cudaStream_t stream);

}  // namespace tandem::kernels::cuda
