// bf16 on the host, for the CUDA driver's host-side work: initial parameter values written to
// bf16 buffers and the offloaded (CPU) Adam of a bf16 run. bf16 is the top half of an IEEE
// float; rounding is to nearest, ties to even (as __float2bfloat16_rn), NaN stays NaN.
#pragma once

#include <cstdint>
#include <cstring>

namespace tandem::exec {

inline uint16_t float_to_bf16_bits(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet NaN
  u += 0x7fffu + ((u >> 16) & 1u);
  return uint16_t(u >> 16);
}

inline float bf16_bits_to_float(uint16_t h) {
  const uint32_t u = uint32_t(h) << 16;
  float f;
  std::memcpy(&f, &u, 4);
  return f;
}

}  // namespace tandem::exec
