#pragma once
// Launch shapes shared by the kernels.

#include <algorithm>
#include <cstdint>

namespace tandem::kernels::cuda::detail {

constexpr int kBlock = 256;

// Blocks for a grid-stride loop over n elements: enough to fill the GPU, capped so the loop
// (not the grid) covers very large n.
inline unsigned int elementwise_blocks(std::int64_t n) {
  constexpr std::int64_t kMaxBlocks = 1 << 16;
  return static_cast<unsigned int>(
      std::clamp<std::int64_t>((n + kBlock - 1) / kBlock, 1, kMaxBlocks));
}

}  // namespace tandem::kernels::cuda::detail
