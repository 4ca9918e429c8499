#include "kernels/cpu/embedding.h"

#include <algorithm>

namespace tandem::kernels::cpu {

void embedding_forward(const std::int32_t* tokens, std::int64_t n, const float* table,
                       std::int64_t rows, std::int64_t cols, std::int64_t row_offset, float* out) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t local = static_cast<std::int64_t>(tokens[i]) - row_offset;
    float* oi = out + i * cols;
    if (local >= 0 && local < rows) {
      std::copy(table + local * cols, table + (local + 1) * cols, oi);
    } else {
      std::fill(oi, oi + cols, 0.0f);
    }
  }
}

void embedding_backward(const std::int32_t* tokens, std::int64_t n, const float* dout,
                        std::int64_t rows, std::int64_t cols, std::int64_t row_offset,
                        float* dtable) {
  for (std::int64_t i = 0; i < n; ++i) {
    const std::int64_t local = static_cast<std::int64_t>(tokens[i]) - row_offset;
    if (local < 0 || local >= rows) continue;
    float* dr = dtable + local * cols;
    const float* di = dout + i * cols;
    for (std::int64_t c = 0; c < cols; ++c) dr[c] += di[c];
  }
}

}  // namespace tandem::kernels::cpu
