#include "exec/cuda/caching_allocator.h"

#include <algorithm>
#include <string>

#include "shared/error.h"

namespace tandem::exec {
namespace {

constexpr int64_t kSmallStep = 512;
constexpr int64_t kLarge = int64_t(1) << 20;

}  // namespace

CachingAllocator::CachingAllocator(BlockSource& source) : source_(source) {}

CachingAllocator::~CachingAllocator() {
  trim();
  for (auto& [p, l] : live_blocks_) source_.give_back(p, l.block);
}

int64_t CachingAllocator::size_class(int64_t bytes) {
  if (bytes <= kSmallStep) return kSmallStep;
  if (bytes <= kLarge) return (bytes + kSmallStep - 1) / kSmallStep * kSmallStep;
  int64_t pow2 = kLarge;  // the largest power of two <= bytes
  while (pow2 <= bytes / 2) pow2 *= 2;
  const int64_t step = pow2 / 4;
  return (bytes + step - 1) / step * step;
}

void* CachingAllocator::allocate(int64_t bytes) {
  const int64_t block = size_class(bytes);
  const int64_t requested = std::max<int64_t>(bytes, 0);
  void* p = nullptr;
  auto it = free_.find(block);
  if (it != free_.end() && !it->second.empty()) {
    p = it->second.back();
    it->second.pop_back();
    cached_ -= block;
  } else {
    p = source_.obtain(block);
    if (!p && cached_ > 0) {
      trim();
      p = source_.obtain(block);
    }
    if (!p)
      throw Error("exec: out of device memory allocating " + std::to_string(bytes) + " bytes (block " +
                      std::to_string(block) + "; live " + std::to_string(live_) + ", reserved " +
                      std::to_string(reserved_) + " bytes)",
                  ErrorKind::kOutOfMemory);
    ++source_calls_;
    reserved_ += block;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
  }
  live_blocks_[p] = Live{requested, block};
  live_ += requested;
  peak_ = std::max(peak_, live_);
  return p;
}

void CachingAllocator::release(void* p) {
  auto it = live_blocks_.find(p);
  if (it == live_blocks_.end())
    throw Error("exec: device allocator: release of a pointer that is not live (unknown or released twice)", ErrorKind::kInternal);
  const Live l = it->second;
  live_blocks_.erase(it);
  live_ -= l.requested;
  free_[l.block].push_back(p);
  cached_ += l.block;
}

int64_t CachingAllocator::requested_bytes(const void* p) const {
  auto it = live_blocks_.find(const_cast<void*>(p));
  return it == live_blocks_.end() ? -1 : it->second.requested;
}

void CachingAllocator::trim() {
  for (auto& [block, list] : free_)
    for (void* p : list) {
      source_.give_back(p, block);
      reserved_ -= block;
      cached_ -= block;
    }
  free_.clear();
}

}  // namespace tandem::exec
