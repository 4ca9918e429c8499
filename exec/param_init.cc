#include "exec/param_init.h"

#include <cmath>

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

}  // namespace

float init_value(uint64_t seed, const std::string& name, int64_t global_cols, int64_t r, int64_t c) {
  if (ends_with(name, "ln1.weight") || ends_with(name, "ln2.weight") || ends_with(name, "final_norm.weight"))
    return 1.0f;
  if (ends_with(name, ".bias")) return 0.0f;
  const uint64_t h1 = splitmix64(seed ^ fnv1a(name) ^ uint64_t(r * global_cols + c));
  const uint64_t h2 = splitmix64(h1);
  // u1 in (0, 1] so that log(u1) is finite.
  const double u1 = (double(h1 >> 11) + 1.0) * (1.0 / 9007199254740992.0);
  const double u2 = double(h2 >> 11) * (1.0 / 9007199254740992.0);
  const double z = std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * M_PI * u2);
  return float(kInitStddev * z);
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
  const Buffer& rb = program_.buffers[root];
  out.assign(rb.bytes / 4, 0.0f);
  if (rb.shard_of != kNoId) {
    const std::vector<float> full = values_of(rb.shard_of);
    const int64_t first = rb.shard_offset_bytes / 4;
    for (size_t i = 0; i < out.size(); ++i)
      if (first + int64_t(i) < int64_t(full.size())) out[i] = full[first + i];  // beyond: padding, 0
  }
  for (BufferId v : sliced_views_[root]) {
    const Buffer& b = program_.buffers[v];
    if (b.dtype != DType::kFp32) throw Error("exec: parameter " + b.name + " is not fp32 (the host driver runs fp32)");
    int64_t off = 0;
    root_of(v, &off);
    const GlobalSlice& s = b.slice;
    if (s.rows * s.cols * 4 != b.bytes)
      throw Error("exec: parameter view " + b.name + " holds " + std::to_string(b.bytes) + " bytes, its slice " +
                  std::to_string(s.rows) + "x" + std::to_string(s.cols) + " fp32");
    float* dst = out.data() + off / 4;
    for (int64_t i = 0; i < s.rows; ++i)
      for (int64_t j = 0; j < s.cols; ++j)
        dst[i * s.cols + j] = init_value(seed_, b.name, s.global_cols, s.row0 + i, s.col0 + j);
  }
}

std::vector<float> ParamInit::values_of(BufferId id) const {
  int64_t off = 0;
  const BufferId root = root_of(id, &off);
  std::vector<float> all;
  fill_root(root, all);
  if (root == id) return all;
  const int64_t n = program_.buffers[id].bytes / 4;
  return std::vector<float>(all.begin() + off / 4, all.begin() + off / 4 + n);
}

}  // namespace tandem::exec
