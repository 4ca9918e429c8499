#include "sim/host_memory_model.h"

#include <algorithm>
#include <array>
#include <vector>

namespace tandem::sim {

HostMemoryModel::HostMemoryModel(const proto::CalibrationProfile& profile) {
  std::vector<std::array<double, 4>> allocs, frees;  // (flops 0, bytes, time, weight)
  for (const proto::MemoryOpTime& m : profile.memory_ops())
    (m.alloc() ? allocs : frees).push_back({0.0, double(m.bytes()), m.mean_s(), double(std::max(1u, m.samples()))});
  if (!allocs.empty()) alloc_ = fit_host_kernels(allocs);
  if (!frees.empty()) free_ = fit_host_kernels(frees);
}

double HostMemoryModel::time_s(bool alloc, int64_t bytes) const {
  const HostFit& f = alloc ? alloc_ : free_;
  return f.shapes == 0 ? 0.0 : f.fixed_s + f.s_per_byte * double(bytes);
}

}  // namespace tandem::sim
