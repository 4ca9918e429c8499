#pragma once
// Vocab-parallel token embedding on the CPU (float32).
//
// A tensor-parallel rank holds rows [row_offset, row_offset + rows) of the vocabulary table, as
// table [rows, cols]. Forward writes out [n, cols]: out[i] = table[tokens[i] - row_offset] when the
// token falls in this shard, zeros otherwise; the partial outputs of the shards are summed by an
// all-reduce elsewhere. With row_offset = 0 and rows = vocabulary size it is a plain lookup.
//
// Backward ACCUMULATES dout[i] into dtable[tokens[i] - row_offset] for in-shard tokens (repeated
// tokens add up); other tokens are ignored.

#include <cstdint>

namespace tandem::kernels::cpu {

void embedding_forward(const std::int32_t* tokens, std::int64_t n, const float* table,
                       std::int64_t rows, std::int64_t cols, std::int64_t row_offset, float* out);

void embedding_backward(const std::int32_t* tokens, std::int64_t n, const float* dout,
                        std::int64_t rows, std::int64_t cols, std::int64_t row_offset,
                        float* dtable);

}  // namespace tandem::kernels::cpu
