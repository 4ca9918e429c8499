#include "search/memory_bound.h"

#include <algorithm>

#include "shared/param_layout.h"
#include "shared/pipeline_order.h"
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
    // Under offload auto (GradBucket::host_optimizer) the gradients go to the host behind their
    // copy and the optimizer states live there: nothing more is counted (a lower bound).
    if (gb.host_optimizer) continue;
    // Gradients: the whole bucket below ZeRO-2, the shard from 2 on (always on the device).
    bytes += (zero < 2 ? E : S) * g;
    // Optimizer states, over the shard from ZeRO-1 on, on the host with offload or a host chunk:
    // the master (software.master_params: fp32, 16-bit remainders, or none; Scenario::master_params
    // says none for fp32 parameters) and Adam's m and v in software.optimizer_state_dtype.
    if (gb.on_host || off) continue;
    const int64_t n = zero >= 1 ? S : E;
    const MasterParams mp = point.master_params();
    const int64_t master = mp == MasterParams::kFp32 ? 4 : mp == MasterParams::kRemainder ? 2 : 0;
    bytes += n * (master + 2 * dtype_bytes(point.optimizer_state_dtype()));
  }
  return bytes;
}

int64_t stored_layer_forwards(const Scenario& point, int stage) {
  const StrategySpec& s = point.strategy;
  const int64_t chunks = int64_t{s.pp} * s.virtual_stages;
  if (chunks <= 0 || point.model.layers % chunks != 0) return 0;
  const int64_t counted = point.model.layers / chunks - 1;  // the chunk's last layer not counted
  int64_t forwards = 0;
  for (const PipeOp& op : pipeline_order(s.pp_schedule, s.pp, stage, s.micro_batches(), s.virtual_stages)) {
    if (!op.forward) break;
    ++forwards;
  }
  return forwards * counted;
}

int64_t peak_memory_lower_bound(const Scenario& point, int64_t layer_stored_bytes) {
  int64_t most = 0;
  for (int stage = 0; stage < point.strategy.pp; ++stage)
    most = std::max(most, model_state_bytes(point, stage) + stored_layer_forwards(point, stage) * layer_stored_bytes);
  return most;
}

int64_t peak_memory_lower_bound(const Scenario& point) {
  int64_t most = 0;
  for (int stage = 0; stage < point.strategy.pp; ++stage) most = std::max(most, model_state_bytes(point, stage));
  return most;
}

}  // namespace tandem::search
