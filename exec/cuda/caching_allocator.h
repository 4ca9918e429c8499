// The CUDA driver's device allocator, as pure bookkeeping over a small backend interface, so that
// its rules (size classes, reuse, accounting) are testable without a GPU.
//
// - Size classes: a request is rounded up to a multiple of 512 bytes below 1 MiB, and above that
//   to one of four steps per power of two (1, 1.25, 1.5, 1.75 x 2^k), so at most 25 % is wasted
//   on large blocks. A released block goes to its class's free list and is handed out again for
//   any request of the same class; nothing is split or merged.
// - When the backend is out of memory, every cached block is given back and the request retried
//   once; then an Error (exit code 3) names the request, the live and the reserved bytes.
// - Accounting: live_bytes/peak_bytes count the bytes *requested* by live allocations, which is
//   what the runtime counts per root buffer (exec/runtime.cc) and the planner plans
//   (shared/memory_timeline.h); reserved_bytes counts what the backend holds, cache included.
// The allocator does not zero memory and is not thread-safe (the runtime is single-threaded).
#pragma once

#include <cstdint>
#include <map>
#include <unordered_map>
#include <vector>

namespace tandem::exec {

// Where blocks come from: cudaMalloc/cudaFree in the driver, malloc/free in the tests.
class BlockSource {
 public:
  virtual ~BlockSource() = default;
  // A block of exactly `bytes` (> 0), or nullptr when out of memory (other failures throw).
  virtual void* obtain(int64_t bytes) = 0;
  virtual void give_back(void* p, int64_t bytes) = 0;
};

class CachingAllocator {
 public:
  explicit CachingAllocator(BlockSource& source);
  ~CachingAllocator();  // gives every block back, live or cached
  CachingAllocator(const CachingAllocator&) = delete;
  CachingAllocator& operator=(const CachingAllocator&) = delete;

  // The block size a request of `bytes` gets (bytes <= 0 gets the smallest class, 512).
  static int64_t size_class(int64_t bytes);

  void* allocate(int64_t bytes);
  // Error (exit code 1) for a pointer that is not live here (unknown or released twice).
  void release(void* p);
  // Gives every cached (free) block back to the source.
  void trim();
  // The bytes requested for the live block that starts at p; -1 when no live block starts there.
  int64_t requested_bytes(const void* p) const;

  int64_t live_bytes() const { return live_; }
  int64_t peak_bytes() const { return peak_; }
  int64_t reserved_bytes() const { return reserved_; }
  int64_t peak_reserved_bytes() const { return peak_reserved_; }
  int64_t cached_bytes() const { return cached_; }
  int64_t source_calls() const { return source_calls_; }  // blocks obtained from the source

 private:
  struct Live {
    int64_t requested = 0, block = 0;
  };
  BlockSource& source_;
  std::map<int64_t, std::vector<void*>> free_;  // by block size
  std::unordered_map<void*, Live> live_blocks_;
  int64_t live_ = 0, peak_ = 0, reserved_ = 0, peak_reserved_ = 0, cached_ = 0, source_calls_ = 0;
};

}  // namespace tandem::exec
