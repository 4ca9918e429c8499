#include "exec/param_init.h"

#include <algorithm>
#include <cmath>
#include <thread>

#include "exec/synthetic_data.h"
#include "shared/error.h"

namespace tandem::exec {
namespace {

bool ends_with(const std::string& s, const char* suffix) {
  const std::string x(suffix);
  return s.size() >= x.size() && s.compare(s.size() - x.size(), x.size(), x) == 0;
}

uint64_t fnv1a(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (unsigned char ch : s) h = (h ^ ch) * 0x100000001b3ULL;
  return h;
}

// How a tensor's elements are initialised, resolved once per tensor (not per element).
struct InitRule {
  enum Kind { kOne, kZero, kNormal } kind = kNormal;
  uint64_t name_hash = 0;
};

InitRule rule_for(const std::string& name) {
  if (ends_with(name, "ln1.weight") || ends_with(name, "ln2.weight") || ends_with(name, "final_norm.weight"))
    return {InitRule::kOne, 0};
  if (ends_with(name, ".bias")) return {InitRule::kZero, 0};
  return {InitRule::kNormal, fnv1a(name)};
}

float rule_value(const InitRule& rule, uint64_t seed, int64_t global_cols, int64_t r, int64_t c) {
  if (rule.kind == InitRule::kOne) return 1.0f;
  if (rule.kind == InitRule::kZero) return 0.0f;
  const uint64_t h1 = splitmix64(seed ^ rule.name_hash ^ uint64_t(r * global_cols + c));
  const uint64_t h2 = splitmix64(h1);
  // u1 in (0, 1] so that log(u1) is finite.
  const double u1 = (double(h1 >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  const double u2 = double(h2 >> 11) * (1.0 / 9007199254740992.0);
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  return float(kInitStddev * z);
}

}  // namespace

float init_value(uint64_t seed, const std::string& name, int64_t global_cols, int64_t r, int64_t c) {
  return rule_value(rule_for(name), seed, global_cols, r, c);
}

ParamInit::ParamInit(const Program& program, uint64_t seed) : program_(program), seed_(seed) {
  sliced_views_.resize(program.buffers.size());
  for (const Buffer& b : program.buffers) {
    if (!b.has_slice) continue;
    int64_t off = 0;
    sliced_views_[root_of(b.id, &off)].push_back(b.id);
  }
}

BufferId ParamInit::root_of(BufferId id, int64_t* offset_bytes) const {
  *offset_bytes = 0;
  while (program_.buffers.at(id).is_view()) {
    *offset_bytes += program_.buffers[id].view_offset_bytes;
    id = program_.buffers[id].view_of;
  }
  return id;
}

bool ParamInit::holds_params(BufferId id) const {
  int64_t off = 0;
  const BufferId root = root_of(id, &off);
  if (!sliced_views_[root].empty()) return true;
  const Buffer& b = program_.buffers[root];
  return b.shard_of != kNoId && holds_params(b.shard_of);
}

void ParamInit::fill_root(BufferId root, std::vector<float>& out) const {
  // One float per element whatever the buffer's dtype: a driver storing bf16 rounds them.
  const Buffer& rb = program_.buffers[root];
  const int64_t e = dtype_bytes(rb.dtype);
  out.assign(rb.bytes / e, 0.0f);
  if (rb.shard_of != kNoId) {
    const std::vector<float> full = values_of(rb.shard_of);
    const int64_t first = rb.shard_offset_bytes / e;
    for (size_t i = 0; i < out.size(); ++i)
      if (first + int64_t(i) < int64_t(full.size())) out[i] = full[first + i];  // beyond: padding, 0
  }
  for (BufferId v : sliced_views_[root]) {
    const Buffer& b = program_.buffers[v];
    if (b.dtype != rb.dtype)
      throw Error("exec: parameter " + b.name + " is " + to_string(b.dtype) + " inside a " + to_string(rb.dtype) +
                  " buffer");
    int64_t off = 0;
    root_of(v, &off);
    const GlobalSlice& s = b.slice;
    if (s.rows * s.cols * e != b.bytes)
      throw Error("exec: parameter view " + b.name + " holds " + std::to_string(b.bytes) + " bytes, its slice " +
                  std::to_string(s.rows) + "x" + std::to_string(s.cols) + " " + to_string(b.dtype));
    const InitRule rule = rule_for(b.name);
    float* dst = out.data() + off / e;
    // Billions of values for a large model: rows are split over the cores (each element's value
    // depends only on its coordinates, so the result does not depend on the split).
    auto fill_rows = [&](int64_t first, int64_t last) {
      for (int64_t i = first; i < last; ++i)
        for (int64_t j = 0; j < s.cols; ++j)
          dst[i * s.cols + j] = rule_value(rule, seed_, s.global_cols, s.row0 + i, s.col0 + j);
    };
    const int64_t threads =
        std::min<int64_t>(std::max(1u, std::thread::hardware_concurrency()), s.rows * s.cols / (1 << 20) + 1);
    if (threads <= 1) {
      fill_rows(0, s.rows);
      continue;
    }
    std::vector<std::thread> pool;
    const int64_t per = (s.rows + threads - 1) / threads;
    for (int64_t t = 0; t < threads; ++t) {
      const int64_t first = std::min(s.rows, t * per), last = std::min(s.rows, first + per);
      if (first < last) pool.emplace_back(fill_rows, first, last);
    }
    for (std::thread& th : pool) th.join();
  }
}

std::vector<float> ParamInit::values_of(BufferId id) const {
  int64_t off = 0;
  const BufferId root = root_of(id, &off);
  std::vector<float> all;
  fill_root(root, all);
  if (root == id) return all;
  const int64_t e = dtype_bytes(program_.buffers[root].dtype);
  const int64_t n = program_.buffers[id].bytes / e;
  return std::vector<float>(all.begin() + off / e, all.begin() + off / e + n);
}

}  // namespace tandem::exec
