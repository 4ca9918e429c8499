// The CUDA driver's caching allocator as bookkeeping over a host BlockSource (no GPU needed):
// size classes, reuse, live/peak accounting in requested bytes, OOM retry after trimming; and the
// host bf16 rounding the driver uses for initial values and offloaded Adam.
#include "exec/cuda/caching_allocator.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <limits>
#include <set>

#include "exec/cuda/bf16_host.h"
#include "shared/error.h"

namespace tandem::exec {
namespace {

// malloc-backed blocks, with a byte limit to provoke out-of-memory.
class FakeSource : public BlockSource {
 public:
  int64_t limit = std::numeric_limits<int64_t>::max();
  int64_t held = 0;
  int obtained = 0, returned = 0;
  void* obtain(int64_t bytes) override {
    if (held + bytes > limit) return nullptr;
    held += bytes;
    ++obtained;
    return std::malloc(size_t(bytes));
  }
  void give_back(void* p, int64_t bytes) override {
    held -= bytes;
    ++returned;
    std::free(p);
  }
};

TEST(CachingAllocator, SizeClasses) {
  EXPECT_EQ(CachingAllocator::size_class(0), 512);
  EXPECT_EQ(CachingAllocator::size_class(1), 512);
  EXPECT_EQ(CachingAllocator::size_class(512), 512);
  EXPECT_EQ(CachingAllocator::size_class(513), 1024);
  EXPECT_EQ(CachingAllocator::size_class(1 << 20), 1 << 20);
  // Above 1 MiB: quarter steps of the power of two below.
  EXPECT_EQ(CachingAllocator::size_class((1 << 20) + 1), (1 << 20) + (1 << 18));
  EXPECT_EQ(CachingAllocator::size_class(3 << 20), 3 << 20);           // 1.5 x 2 MiB
  EXPECT_EQ(CachingAllocator::size_class((3 << 20) + 1), 7 << 19);     // 1.75 x 2 MiB
  EXPECT_EQ(CachingAllocator::size_class((7 << 19) + 1), 4 << 20);     // next power of two
  for (int64_t b : {int64_t(1), int64_t(4097), int64_t(1) << 25, (int64_t(1) << 33) + 12345}) {
    const int64_t c = CachingAllocator::size_class(b);
    EXPECT_GE(c, b);
    EXPECT_LE(c, b + b / 4 + 512) << b;  // at most 25 % (or one 512-byte step) wasted
  }
}

TEST(CachingAllocator, ReusesReleasedBlocksOfTheSameClass) {
  FakeSource src;
  CachingAllocator a(src);
  void* p = a.allocate(1000);
  a.release(p);
  EXPECT_EQ(a.cached_bytes(), 1024);
  void* q = a.allocate(900);  // same 1024-byte class: the cached block
  EXPECT_EQ(q, p);
  EXPECT_EQ(src.obtained, 1);
  void* r = a.allocate(2000);  // another class: a new block
  EXPECT_NE(r, p);
  EXPECT_EQ(src.obtained, 2);
  EXPECT_EQ(a.reserved_bytes(), 1024 + 2048);
  a.release(q);
  a.release(r);
}

TEST(CachingAllocator, CountsRequestedBytesLikeTheRuntime) {
  FakeSource src;
  CachingAllocator a(src);
  void* x = a.allocate(1000);
  void* y = a.allocate(3000);
  EXPECT_EQ(a.live_bytes(), 4000);
  EXPECT_EQ(a.requested_bytes(x), 1000);
  EXPECT_EQ(a.requested_bytes(static_cast<char*>(x) + 4), -1);
  a.release(x);
  EXPECT_EQ(a.live_bytes(), 3000);
  EXPECT_EQ(a.requested_bytes(x), -1);
  void* z = a.allocate(500);
  EXPECT_EQ(a.live_bytes(), 3500);
  EXPECT_EQ(a.peak_bytes(), 4000);  // the peak is of requested bytes, not of blocks
  a.release(y);
  a.release(z);
  EXPECT_EQ(a.live_bytes(), 0);
  EXPECT_EQ(a.peak_bytes(), 4000);
  EXPECT_EQ(a.peak_reserved_bytes(), 1024 + 3072 + 512);
}

TEST(CachingAllocator, TrimsTheCacheWhenOutOfMemoryAndRetries) {
  FakeSource src;
  src.limit = 4096;
  CachingAllocator a(src);
  void* p = a.allocate(3000);  // 3072
  a.release(p);                // cached
  void* q = a.allocate(2000);  // 2048: 3072 + 2048 > 4096, so the cache is given back first
  EXPECT_EQ(src.returned, 1);
  EXPECT_EQ(a.cached_bytes(), 0);
  EXPECT_EQ(a.reserved_bytes(), 2048);
  try {
    a.allocate(4000);  // 4096 > 4096 - 2048 with nothing cached
    FAIL() << "expected out of memory";
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 3);
    EXPECT_NE(std::string(e.what()).find("out of device memory allocating 4000 bytes"), std::string::npos) << e.what();
  }
  a.release(q);
}

TEST(CachingAllocator, RejectsUnknownAndDoubleRelease) {
  FakeSource src;
  CachingAllocator a(src);
  void* p = a.allocate(64);
  a.release(p);
  EXPECT_THROW(a.release(p), Error);
  int x = 0;
  EXPECT_THROW(a.release(&x), Error);
}

TEST(CachingAllocator, GivesEveryBlockBackAtTheEnd) {
  FakeSource src;
  {
    CachingAllocator a(src);
    a.allocate(100);
    a.release(a.allocate(5000));
  }
  EXPECT_EQ(src.held, 0);
  EXPECT_EQ(src.obtained, src.returned);
}

TEST(Bf16Host, RoundsToNearestEven) {
  EXPECT_EQ(float_to_bf16_bits(1.0f), 0x3f80);
  EXPECT_EQ(float_to_bf16_bits(-2.0f), 0xc000);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties go to the even mantissa (1.0).
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3 * 2^-8 is halfway between 1 + 2^-7 (odd) and 1 + 2^-6: rounds up to even.
  EXPECT_EQ(float_to_bf16_bits(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(float_to_bf16_bits(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -16)), 0x3f81);
  EXPECT_TRUE(std::isnan(bf16_bits_to_float(float_to_bf16_bits(std::nanf("")))));
  EXPECT_EQ(bf16_bits_to_float(0x3f80), 1.0f);
  EXPECT_EQ(bf16_bits_to_float(float_to_bf16_bits(0.15625f)), 0.15625f);  // exact in bf16
}

}  // namespace
}  // namespace tandem::exec
