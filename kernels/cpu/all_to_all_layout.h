// The layout changes around a sequence-parallel all-to-all (DeepSpeed-Ulysses, Jacobs et al. 2023,
// arXiv 2309.14509, section 3.1): an all-to-all sends block j of its input to rank j and stores
// the block from rank i at slot i, so the tensors are permuted into blocks before it and out of
// them after it. Each permutation is a handful of strided 2D copies (the plan below), which the
// CPU runs with memcpy and the CUDA version with cudaMemcpy2DAsync.
//
// Shapes (elements; B batch, T local sequence, P ranks, C = q_cols + 2 kv_cols, c = C / P):
//   pack,   to_heads: x [B, T, C]         -> blocks [P][B, T, c], block j = part j of the Q, K, V segments
//   unpack, to_heads: blocks [P][B, T, c] -> y [B, P*T, c] (block i is sequence chunk i)
//   pack,   to_seq:   x [B, P*T, c]       -> blocks [P][B, T, c], block j = sequence chunk j
//   unpack, to_seq:   blocks [P][B, T, c] -> y [B, T, C] (block i is part i of each segment)
#pragma once

#include <cstdint>
#include <vector>

namespace tandem::kernels::cpu {

struct Copy2D {
  std::int64_t src = 0, src_pitch = 0;  // bytes
  std::int64_t dst = 0, dst_pitch = 0;
  std::int64_t width = 0, rows = 0;     // bytes per row, rows
};

struct AllToAllShape {
  std::int64_t batch = 0, s_local = 0, ranks = 0, q_cols = 0, kv_cols = 0;
  int element_bytes = 4;
};

// The copies of one permutation; pack when `pack`, else unpack. Throws std::invalid_argument
// unless every segment divides by ranks.
std::vector<Copy2D> all_to_all_plan(const AllToAllShape& s, bool pack, bool to_heads);
void run_copies(const std::vector<Copy2D>& plan, const void* src, void* dst);

}  // namespace tandem::kernels::cpu
