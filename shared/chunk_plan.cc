#include "shared/chunk_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "shared/error.h"

namespace tandem {
namespace {

int64_t round_up(int64_t n, int64_t m) { return m <= 1 ? n : (n + m - 1) / m * m; }

}  // namespace

int64_t chunk_unused_elements(const std::vector<int64_t>& sizes, int64_t chunk_elements) {
  int64_t acc = 0, left = 0;
  for (int64_t s : sizes) {
    if (s > left) {
      acc += left;
      left = chunk_elements;
    }
    left -= s;
  }
  return left + acc;
}

std::vector<int64_t> without_extra_large(const std::vector<int64_t>& sizes) {
  if (sizes.empty()) return sizes;
  double mean = 0;
  for (int64_t s : sizes) mean += double(s);
  mean /= double(sizes.size());
  double var = 0;
  for (int64_t s : sizes) var += (double(s) - mean) * (double(s) - mean);
  const double upper = mean + 3 * std::sqrt(var / double(sizes.size()));
  std::vector<int64_t> kept;
  for (int64_t s : sizes)
    if (double(s) <= upper) kept.push_back(s);
  return kept;
}

ChunkSearch search_chunk_size(const std::vector<int64_t>& sizes, const ChunkSearchOptions& o) {
  if (o.interval <= 0 || o.search_range < 0 || o.min_chunk < 0 || o.dp < 1)
    throw Error("chunk search: interval must be positive, range, minimum and dp not negative", ErrorKind::kInternal);
  int64_t total = 0;
  for (int64_t s : sizes) total += s;
  ChunkSearch r;
  if (total < o.min_chunk) {
    r.chunk_elements = round_up(std::max<int64_t>(total, 1), o.dp);
    r.keep_gathered = true;
    return r;
  }
  const std::vector<int64_t> kept = o.filter_extra_large ? without_extra_large(sizes) : sizes;
  int64_t max_size = o.min_chunk;
  for (int64_t s : kept) max_size = std::max(max_size, s);
  const int64_t start = round_up(max_size, o.interval);
  r.chunk_elements = start;
  r.wasted_elements = std::numeric_limits<int64_t>::max();
  for (int64_t c = start; c <= start + o.search_range; c += o.interval) {
    const int64_t waste = chunk_unused_elements(kept, c);
    if (waste < r.wasted_elements) r.wasted_elements = waste, r.chunk_elements = c;
  }
  r.chunk_elements = round_up(r.chunk_elements, o.dp);
  return r;
}

std::vector<PackedChunk> pack_chunks(const std::vector<int64_t>& sizes, int64_t chunk_elements, int dp) {
  std::vector<PackedChunk> out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    const int64_t s = sizes[i];
    if (out.empty() || out.back().used + s > out.back().capacity) {
      PackedChunk c;
      c.capacity = s > chunk_elements ? round_up(s, dp) : chunk_elements;
      out.push_back(std::move(c));
    }
    out.back().members.push_back(int(i));
    out.back().used += s;
  }
  return out;
}

std::vector<bool> host_chunks(const std::vector<int64_t>& chunk_bytes, double fraction) {
  double total = 0;
  for (int64_t b : chunk_bytes) total += double(b);
  const double target = total * fraction;
  std::vector<bool> host(chunk_bytes.size(), false);
  double sent = 0;
  for (size_t i = 0; i < chunk_bytes.size(); ++i) {
    if (!(sent < target)) break;
    host[i] = true;
    sent += double(chunk_bytes[i]);
  }
  return host;
}

}  // namespace tandem
