#include "search/memory_bound.h"

#include <algorithm>

#include "shared/param_layout.h"
#include "shared/sequence_split.h"

namespace tandem::search {

int64_t model_state_bytes(const Scenario& point, int stage) {
  const StrategySpec& s = point.strategy;
  const ParamLayout layout = make_param_layout(point, stage, 0);
  // shared/grad_sync.cc: zero_stage (0 with a gradient group of one), offload_optimizer, the
  // parameter dtype (st.dims.dtype: bf16 for fp8, shared/step_state.cc make_dims) and the
  // gradients' (Scenario::grad_dtype).
  const int64_t group = int64_t{s.dp} * (splits_sequence_axis(s) ? s.sp : 1);
  const int zero = group > 1 ? s.zero_stage : 0;
  const bool off = s.offload == Offload::kOptimizer;
  const DType param_type = point.param_dtype();
  const int64_t e = dtype_bytes(param_type), g = dtype_bytes(point.grad_dtype());
  int64_t bytes = 0;
  for (const GradBucket& gb : layout.buckets) {
    const int64_t E = gb.elements, S = gb.shard_elements;
    // Parameters: the whole bucket below ZeRO-3 (on the host for a host chunk), the shard at 3.
    if (zero < 3 && !gb.on_host) bytes += E * e;
    if (zero == 3 && !gb.on_host) bytes += S * e;
    // Gradients: the whole bucket below ZeRO-2, the shard from 2 on (always on the device).
    bytes += (zero < 2 ? E : S) * g;
    // Optimizer states: fp32 master (unless the parameters are fp32 and it stays on the device),
    // Adam's m and v, over the shard from ZeRO-1 on; on the host with offload or a host chunk.
    if (gb.on_host || off) continue;
    const int64_t n = zero >= 1 ? S : E;
    bytes += n * 4 * (param_type != DType::kFp32 ? 3 : 2);
  }
  return bytes;
}

int64_t peak_memory_lower_bound(const Scenario& point) {
  int64_t most = 0;
  for (int stage = 0; stage < point.strategy.pp; ++stage) most = std::max(most, model_state_bytes(point, stage));
  return most;
}

}  // namespace tandem::search
