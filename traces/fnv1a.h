// FNV-1a, 64 bits (Fowler, Noll and Vo; offset basis 0xcbf29ce484222325, prime 0x100000001b3):
// the hash of the scenario digest (traces/scenario_digest.h) and of the trace checksum
// (traces/trace_io.h). Not a cryptographic hash: it detects damage, not tampering.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>

namespace tandem {

class Fnv1a64 {
 public:
  static constexpr uint64_t kOffsetBasis = 0xcbf29ce484222325ull;
  static constexpr uint64_t kPrime = 0x100000001b3ull;

  void update(const void* data, size_t size) {
    const auto* p = static_cast<const unsigned char*>(data);
    uint64_t h = hash_;
    for (size_t i = 0; i < size; ++i) {
      h ^= p[i];
      h *= kPrime;
    }
    hash_ = h;
  }
  void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }
  uint64_t value() const { return hash_; }

 private:
  uint64_t hash_ = kOffsetBasis;
};

inline uint64_t fnv1a64(std::string_view bytes) {
  Fnv1a64 h;
  h.update(bytes);
  return h.value();
}

}  // namespace tandem
