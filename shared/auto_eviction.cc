// offload auto's per-operator eviction, as Gemini's GeminiManager.adjust_layout and
// AutoPlacementPolicy.evict_tensors (gemini_mgr.py:98-155, placement_policy.py:149-222 at
// 4f9953be335e; the plan and its rules in shared/auto_placement.h). Runs in the step generator
// before each operator (a parameter unit's pass, and the optimizer step last): the moves are Copy,
// Alloc and Free tasks of the program, so the simulator and the real run make the same moves.
#include <algorithm>

#include "shared/auto_placement.h"
#include "shared/sequence_split.h"
#include "shared/step_state.h"

namespace tandem {
namespace {

bool sharded(const StepState& st) { return grad_group_size(st) > 1; }
int64_t whole_bytes(const StepState& st, int k) { return st.layout.buckets[k].elements * dtype_bytes(st.dims.dtype); }
int64_t shard_bytes(const StepState& st, int k) {
  return st.layout.buckets[k].shard_elements * dtype_bytes(st.dims.dtype);
}
// The device bytes a bucket's resident parameters take (its shard with data parallelism, where
// gathering adds the whole chunk; else the whole chunk).
int64_t resident_bytes(const StepState& st, int k) { return sharded(st) ? shard_bytes(st, k) : whole_bytes(st, k); }
bool on_device(StepState& st, int k) { return !st.layout.buckets[k].on_host || st.bucket(k).resident; }

// Chunk parameters on the device now, as the program-order walk counts them.
int64_t chunk_param_bytes(StepState& st) {
  int64_t b = 0;
  for (int k = 0; k < st.bucket_count(); ++k) {
    if (on_device(st, k)) b += resident_bytes(st, k);
    if (sharded(st) && st.bucket(k).gathered) b += whole_bytes(st, k);
  }
  return b;
}

// What bucket k needs brought or gathered before an operator uses it (_get_layout_info: a chunk
// on the host needs all its bytes, a device chunk not gathered what it lacks of its shard; here a
// gathered chunk lives beside its shard, so gathering adds the whole chunk).
int64_t demand(StepState& st, int k) {
  const int64_t up = on_device(st, k) ? 0 : resident_bytes(st, k);
  if (!sharded(st)) return up;
  return st.bucket(k).gathered ? 0 : up + whole_bytes(st, k);
}

// Operators until bucket k is next needed after operator `op`, around the iteration (`uses` is one
// iteration's compute list); uses.size() + 1 when never.
size_t next_use(const std::vector<std::vector<int>>& uses, size_t op, int k) {
  const size_t n = uses.size();
  for (size_t d = 1; d <= n; ++d) {
    const std::vector<int>& u = uses[(op + d) % n];
    if (std::find(u.begin(), u.end(), k) != u.end()) return d;
  }
  return n + 1;
}

// Evicts host-living bucket k's device copy: copied down into its host shard (Gemini moves the
// chunk: ChunkManager.move_chunk, chunk/manager.py) and freed on the compute stream, which every
// later Alloc of the program follows (shared/memory_order.h).
int64_t evict(StepState& st, int k, int op) {
  BucketBuffers& bb = st.bucket(k);
  const BufferId dev = sharded(st) ? bb.staging : bb.param;
  st.program.copy(CopyDirection::kD2H, dev, bb.host_param, Stream::kD2H);
  st.program.free(dev, Stream::kCompute);
  bb.resident = false;
  const int64_t bytes = resident_bytes(st, k);
  st.auto_record->moves.push_back({op, k, false, bytes});
  return bytes;
}

}  // namespace

void adjust_layout(StepState& st, int unit, bool forward, const std::vector<int>& needed) {
  AutoRecord* rec = st.auto_record;
  if (rec == nullptr) return;
  const int op = int(rec->op_start.size());
  rec->op_start.push_back(st.program.size());
  rec->uses.push_back(needed);
  rec->op_unit.push_back(unit);
  rec->op_forward.push_back(forward ? 1 : 0);
  const AutoOperatorPlan* plan = st.auto_plan;
  if (plan == nullptr || rec->victim >= 0 || rec->failed_op >= 0) return;
  std::vector<int> need = needed;
  std::sort(need.begin(), need.end());
  need.erase(std::unique(need.begin(), need.end()), need.end());
  int64_t want = 0;
  for (int k : need) want += demand(st, k);
  const int64_t non_model = size_t(op) < plan->non_model.size() ? plan->non_model[size_t(op)] : 0;
  int64_t held = chunk_param_bytes(st);
  if (held + want + non_model <= plan->cap_bytes) return;
  // evict_tensors: the chunks on the device not in use, furthest next use first.
  struct Candidate {
    int k;
    size_t next;
  };
  std::vector<Candidate> c;
  for (int k = 0; k < st.bucket_count(); ++k)
    if (st.layout.buckets[k].host_optimizer && on_device(st, k) && !st.bucket(k).gathered &&
        !std::binary_search(need.begin(), need.end(), k))
      c.push_back({k, next_use(plan->uses, size_t(op), k)});
  std::stable_sort(c.begin(), c.end(), [](const Candidate& a, const Candidate& b) { return a.next > b.next; });
  for (const Candidate& v : c) {
    if (held + want + non_model <= plan->cap_bytes) break;
    if (!st.layout.buckets[v.k].on_host) {  // starts on the device: the plan must start it on the host
      rec->victim = v.k;
      return;
    }
    held -= evict(st, v.k, op);
  }
  if (held + want + non_model > plan->cap_bytes) {
    rec->failed_op = op;
    rec->failed_need = held + want + non_model;
    rec->failed_non_model = non_model;
  }
}

void drop_resident_host_chunks(StepState& st) {
  for (int k = 0; k < st.bucket_count(); ++k) {
    BucketBuffers& bb = st.bucket(k);
    if (!bb.resident) continue;
    st.program.free(sharded(st) ? bb.staging : bb.param, Stream::kCompute);
    bb.resident = false;
  }
}

}  // namespace tandem
