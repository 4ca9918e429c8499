// Test-only: trace files built by hand. with_checksum seals a serialized proto::Trace the way
// traces/trace_io.h specifies a trace file ends, computed here from the definition (not with the
// library's code): field 16, wire type fixed64 (tag (16 << 3) | 1 = 129, the varint 0x81 0x01),
// holding the FNV-1a 64 hash (offset basis 0xcbf29ce484222325, prime 0x100000001b3) of every
// byte before the tag, little-endian.
#pragma once

#include <cstdint>
#include <fstream>
#include <sstream>
#include <string>

namespace tandem::testing {

inline uint64_t fnv1a64_of(const std::string& bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

inline std::string with_checksum(std::string bytes) {
  const uint64_t h = fnv1a64_of(bytes);
  bytes += char(0x81);
  bytes += char(0x01);
  for (int i = 0; i < 8; ++i) bytes += char((h >> (8 * i)) & 0xff);
  return bytes;
}

inline std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

inline void spit(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
}

}  // namespace tandem::testing
