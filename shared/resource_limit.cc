#include "shared/resource_limit.h"

#include <algorithm>
#include <cstdio>

#include <unistd.h>

#include "shared/error.h"

namespace tandem {

namespace {

std::string gib(int64_t bytes) {
  char s[32];
  std::snprintf(s, sizeof s, "%.1f", double(bytes) / double(int64_t(1) << 30));
  return s;
}

}  // namespace

int64_t default_max_memory_bytes() {
  const long pages = ::sysconf(_SC_PHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  const int64_t physical = pages > 0 && page > 0 ? int64_t(pages) * int64_t(page) : int64_t(8) << 30;
  return std::max<int64_t>(physical / 2, int64_t(1) << 30);
}

void check_memory_estimate(int64_t estimate_bytes, const std::string& what, const std::string& how,
                           const ResourceLimit& limit) {
  if (estimate_bytes <= limit.max_memory_bytes) return;
  throw Error(what + " needs about " + gib(estimate_bytes) + " GiB of memory (" + how + "), more than the limit of " +
              gib(limit.max_memory_bytes) + " GiB; raise it with " + limit.flag + " GIB or make the run smaller");
}

int64_t checked_mul(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    throw Error(std::string(what) + ": " + std::to_string(a) + " x " + std::to_string(b) +
                " is beyond what 64-bit arithmetic holds");
  return r;
}

int64_t checked_add(int64_t a, int64_t b, const char* what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r))
    throw Error(std::string(what) + ": " + std::to_string(a) + " + " + std::to_string(b) +
                " is beyond what 64-bit arithmetic holds");
  return r;
}

}  // namespace tandem
