#include "shared/generation_heap.h"

#include <malloc.h>
#include <sys/mman.h>

#include <climits>
#include <cstdint>
#include <cstdlib>

namespace tandem {
namespace {

constexpr uintptr_t kHugePage = uintptr_t(2) << 20;
// Requests at or above this come from mmap, each its own mapping: the heap below it.
constexpr int kMmapThreshold = 1 << 30;

}  // namespace

void keep_generation_heap(size_t huge_bytes) {
  mallopt(M_MMAP_THRESHOLD, kMmapThreshold);
  mallopt(M_TRIM_THRESHOLD, INT_MAX);
  // The block in pieces under the mmap threshold, taken one after another from the top of the
  // heap (the process is single-threaded here: nothing else allocates between them), so that
  // they are contiguous and, freed, merge back into the top.
  const size_t piece = size_t(kMmapThreshold) / 2;
  void* pieces[8] = {};
  int n = 0;
  for (size_t left = huge_bytes; left > 0 && n < 8; ++n) {
    const size_t k = left < piece ? left : piece;
    pieces[n] = std::malloc(k);
    if (pieces[n] == nullptr) break;
    const uintptr_t lo = (uintptr_t(pieces[n]) + kHugePage - 1) & ~(kHugePage - 1);
    const uintptr_t hi = (uintptr_t(pieces[n]) + k) & ~(kHugePage - 1);
    if (hi > lo) ::madvise(reinterpret_cast<void*>(lo), hi - lo, MADV_HUGEPAGE);  // a hint: errors ignored
    left -= k;
  }
  for (int i = n - 1; i >= 0; --i) std::free(pieces[i]);
}

void fresh_generation_heap(size_t huge_bytes) {
  malloc_trim(0);
  keep_generation_heap(huge_bytes);
}

}  // namespace tandem
