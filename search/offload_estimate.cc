#include "search/offload_estimate.h"

#include <algorithm>

#include "search/memory_bound.h"
#include "shared/auto_placement.h"
#include "shared/param_layout.h"
#include "shared/sequence_split.h"

namespace tandem::search {

AutoEvictionCost auto_eviction_cost(const Scenario& point, int64_t layer_stored_bytes, double stage_forward_s,
                                    const CommCost& comm) {
  AutoEvictionCost r;
  const StrategySpec& s = point.strategy;
  if (s.offload != Offload::kAuto) return r;
  const ParamLayout layout = make_param_layout(point, 0, 0);  // offload auto has one stage
  const int64_t group = int64_t{s.dp} * (splits_sequence_axis(s) ? s.sp : 1);
  const bool sharded = group > 1;
  const int64_t e = dtype_bytes(point.param_dtype()), g = dtype_bytes(point.grad_dtype());
  double resident = 0, largest = 0;
  bool evictable = false;
  for (const GradBucket& b : layout.buckets) {
    resident += double((sharded ? b.shard_elements : b.elements) * e);
    largest = std::max(largest, double(b.elements));
    evictable = evictable || b.host_optimizer;
  }
  if (!evictable) return r;  // one chunk kept gathered: Gemini never evicts it
  const double gathered = sharded ? 2 * largest * double(e) : 0;
  const double non_model = double(stored_layer_forwards(point, 0)) * double(layer_stored_bytes) + 2 * largest * double(g);
  const double cap = kAutoDeviceCapRatio * double(point.cluster.hbm_bytes());
  r.excess_bytes = std::max(0.0, resident + gathered + non_model - cap);
  if (r.excess_bytes <= 0) return r;
  const double t = comm.copy_s(r.excess_bytes);
  r.exposed_s = double(s.micro_batches()) * (t + std::max(0.0, t - stage_forward_s));
  return r;
}

}  // namespace tandem::search
