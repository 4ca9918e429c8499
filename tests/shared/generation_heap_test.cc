// shared/generation_heap.h: after keep_generation_heap (and fresh_generation_heap), the next
// large allocations lie in memory the kernel may back with transparent huge pages. Checked in
// /proc/self/smaps ("THPeligible"), where the kernel's THP mode is "madvise" (this VM's, and the
// common default): there, memory nobody advised is not eligible, so the check fails without the
// advice. Under "always" every anonymous mapping is eligible and under "never" none is: skipped.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <string>

#include "shared/generation_heap.h"

namespace tandem {
namespace {

std::string thp_mode() {
  std::ifstream f("/sys/kernel/mm/transparent_hugepage/enabled");
  std::string all;
  std::getline(f, all);
  const size_t a = all.find('['), b = all.find(']');
  return a == std::string::npos || b == std::string::npos ? "" : all.substr(a + 1, b - a - 1);
}

// The THPeligible field of the mapping that holds `p` (-1 if not found).
int thp_eligible(const void* p) {
  std::ifstream f("/proc/self/smaps");
  std::string line;
  bool inside = false;
  const uintptr_t x = reinterpret_cast<uintptr_t>(p);
  while (std::getline(f, line)) {
    uintptr_t lo = 0, hi = 0;
    char dash = 0;
    std::istringstream head(line);
    if (head >> std::hex >> lo >> dash >> hi && dash == '-' && line.find(':') > line.find(' ')) {
      inside = lo <= x && x < hi;
      continue;
    }
    if (inside && line.rfind("THPeligible:", 0) == 0) return std::atoi(line.c_str() + std::strlen("THPeligible:"));
  }
  return -1;
}

TEST(GenerationHeap, TheNextLargeAllocationsMayUseHugePages) {
  if (thp_mode() != "madvise") GTEST_SKIP() << "THP mode is not madvise";
  keep_generation_heap(size_t(64) << 20);
  // 16 MiB: under the mmap threshold the heap now has (1 GiB), so it comes from the advised top.
  char* a = static_cast<char*>(std::malloc(size_t(16) << 20));
  ASSERT_NE(a, nullptr);
  std::memset(a, 1, size_t(16) << 20);
  EXPECT_EQ(thp_eligible(a + (size_t(8) << 20)), 1);
  std::free(a);
  fresh_generation_heap(size_t(64) << 20);
  char* b = static_cast<char*>(std::malloc(size_t(16) << 20));
  ASSERT_NE(b, nullptr);
  std::memset(b, 1, size_t(16) << 20);
  EXPECT_EQ(thp_eligible(b + (size_t(8) << 20)), 1);
  std::free(b);
}

// The control: memory mapped without the advice is not eligible in madvise mode, so the test
// above checks the advice and not the machine.
TEST(GenerationHeap, UnadvisedMemoryIsNotEligibleUnderMadviseMode) {
  if (thp_mode() != "madvise") GTEST_SKIP() << "THP mode is not madvise";
  const size_t n = size_t(1) << 31;  // above every mmap threshold: its own mapping, never advised
  char* c = static_cast<char*>(std::malloc(n));
  ASSERT_NE(c, nullptr);
  c[size_t(8) << 20] = 1;
  EXPECT_EQ(thp_eligible(c + (size_t(8) << 20)), 0);
  std::free(c);
}

}  // namespace
}  // namespace tandem
