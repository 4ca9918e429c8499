// Initial values of a rank's persistent buffers, identical whatever the strategy: every element of
// a global parameter tensor has one value, a function of (seed, tensor name, row, column), and a
// rank's buffers take the elements their GlobalSlice (or ZeRO shard) says they hold.
//   - Norm weights (names ending "ln1.weight", "ln2.weight", "final_norm.weight") are 1, biases
//     (".bias") 0: the usual LayerNorm/RMSNorm initialisation.
//   - Everything else is N(0, 0.02) (GPT-2's initialiser), from a counter-based hash:
//     splitmix64(seed ^ fnv1a(name) ^ (r * global_cols + c)) gives two uniforms, Box-Muller a normal.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shared/schedule.h"

namespace tandem::exec {

inline constexpr double kInitStddev = 0.02;

// The value of global element (r, c) of tensor `name` (global_cols columns).
float init_value(uint64_t seed, const std::string& name, int64_t global_cols, int64_t r, int64_t c);

// Resolves what a program's buffers hold at initialisation.
class ParamInit {
 public:
  ParamInit(const Program& program, uint64_t seed);
  // The values buffer `id` (a root, a view or a shard) starts with, one float per element whatever
  // its dtype (a bf16 driver rounds them): the slices of the parameter views that cover it, zero
  // elsewhere.
  std::vector<float> values_of(BufferId id) const;
  // Whether values_of(id) can be non-zero (some parameter view covers the buffer, or its shard_of).
  bool holds_params(BufferId id) const;

 private:
  BufferId root_of(BufferId id, int64_t* offset_bytes) const;
  void fill_root(BufferId root, std::vector<float>& out) const;

  const Program& program_;
  uint64_t seed_;
  std::vector<std::vector<BufferId>> sliced_views_;  // by root: views with has_slice
};

}  // namespace tandem::exec
