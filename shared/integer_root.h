// Floor square and cube roots of a non-negative integer, exact (no floating point): the grid
// tensor-parallel modes need tp = q^2 (2D), d*q^2 (2.5D) or q^3 (3D), checked by the scenario
// resolver (shared/strategy_rules.cc) and by the search's per-layout rules (search/layout_rules.cc).
#pragma once

#include <cstdint>

namespace tandem {

// The largest r with r*r <= n.
inline int64_t isqrt(int64_t n) {
  int64_t r = 0;
  while ((r + 1) * (r + 1) <= n) ++r;
  return r;
}

// The largest r with r*r*r <= n.
inline int64_t icbrt(int64_t n) {
  int64_t r = 0;
  while ((r + 1) * (r + 1) * (r + 1) <= n) ++r;
  return r;
}

}  // namespace tandem
