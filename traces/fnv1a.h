// FNV-1a, 64 bits (Fowler, Noll and Vo): the hash of the scenario digest
// (traces/scenario_digest.h) and of the checksum that ends a trace file (traces/trace_io.h). Not
// a cryptographic hash: it detects damage, not tampering.
#pragma once

#include <cstdint>
#include <string_view>

namespace tandem {

inline constexpr uint64_t kFnvOffsetBasis = 0xcbf29ce484222325ull;
inline constexpr uint64_t kFnvPrime = 0x100000001b3ull;

// The hash of `bytes`, continuing from `hash` (the hash of what came before; kFnvOffsetBasis at
// the start), so that a stream is hashed piece by piece.
inline uint64_t fnv1a64(std::string_view bytes, uint64_t hash = kFnvOffsetBasis) {
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= kFnvPrime;
  }
  return hash;
}

}  // namespace tandem
