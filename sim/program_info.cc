#include "sim/program_info.h"

#include <algorithm>
#include <unordered_set>

#include "shared/error.h"

namespace tandem::sim {

std::shared_ptr<ProgramInfo> analyse_program(Program program, const ComputeCostModel& costs) {
  auto info = std::make_shared<ProgramInfo>();
  const size_t n = program.tasks.size();
  info->cost_s.assign(n, 0.0);
  info->dispatch_s.assign(n, 0.0);
  info->fuse_next.assign(n, 0);
  info->component.assign(n, Component::kVector);
  info->task_buffer.assign(n, 0);
  std::vector<uint8_t> waited_on(n, 0);
  std::vector<uint32_t> pos(n, 0);
  // A buffer's index in program.buffers by its id (kNoId: none). Generated programs number their
  // buffers by index (shared/program_builder.h): then no table; else (an imported trace) a map.
  bool ids_are_indices = true;
  for (size_t i = 0; i < program.buffers.size() && ids_are_indices; ++i) ids_are_indices = program.buffers[i].id == i;
  std::unordered_map<BufferId, uint32_t> by_id;
  if (!ids_are_indices)
    for (size_t i = 0; i < program.buffers.size(); ++i) by_id[program.buffers[i].id] = uint32_t(i);
  auto index_of = [&](BufferId b) -> uint32_t {
    if (ids_are_indices) return b < program.buffers.size() ? b : kNoId;
    auto it = by_id.find(b);
    return it == by_id.end() ? kNoId : it->second;
  };
  // Buffers holding a norm's output (or its all-gather), by the buffer a view is of.
  std::unordered_set<BufferId> norm_out, cast_weights;
  auto root = [&](BufferId b) {
    for (int hops = 0; hops < 8; ++hops) {
      const uint32_t i = index_of(b);
      if (i == kNoId || !program.buffers[i].is_view()) break;
      b = program.buffers[i].view_of;
    }
    return b;
  };
  // A host calibration (sim/host_memory_model.h): the time of the Allocs and Frees of buffers the
  // program frees (persistent ones are allocated in the first step only) is the task's own cost_s
  // and is charged to the next compute-stream kernel, as the host driver runs them on the thread
  // that runs its kernels (ProgramInfo::memory_ops_of).
  const HostMemoryModel* host_memory = costs.host_memory();
  if (host_memory && host_memory->empty()) host_memory = nullptr;
  std::vector<uint8_t> freed;
  if (host_memory) {
    freed.assign(program.buffers.size(), 0);
    for (const Task& t : program.tasks)
      if (const auto* f = std::get_if<Free>(&t.op))
        if (const uint32_t i = index_of(f->buffer); i != kNoId) freed[i] = 1;
  }
  double memory_pending_s = 0;
  std::vector<TaskId> memory_pending;
  size_t last_kernel = n;
  for (size_t i = 0; i < n; ++i) {
    const Task& t = program.tasks[i];
    if (t.id != i) throw Error("schedule: rank " + std::to_string(program.rank) + " task at index " + std::to_string(i) +
                               " has id " + std::to_string(t.id) + " (ids must equal their index)");
    const int s = static_cast<int>(t.stream);
    if (s < 0 || s >= kStreamCount) throw Error("schedule: " + rank_task(program.rank, t.id) + " has no valid stream");
    pos[i] = uint32_t(info->streams[s].size());
    info->streams[s].push_back(t.id);
    for (TaskId d : t.deps) {
      if (d >= i) throw Error("schedule: " + rank_task(program.rank, t.id) + " depends on later task " + std::to_string(d));
      if (program.tasks[d].stream != t.stream) waited_on[d] = 1;
    }
    if (const auto* c = std::get_if<Compute>(&t.op)) {
      info->cost_s[i] = costs.time_s(*c, t.stream == Stream::kHost);
      // A host calibration's time between tasks: its own cost, run before the kernel on the
      // kernel's timer and recorded apart from the kernel (split_memory_time).
      if (const double gap = costs.gap_s(*c); gap > 0) {
        if (info->gap_s.empty()) info->gap_s.assign(n, 0.0);
        info->gap_s[i] = gap;
        info->cost_s[i] += gap;
      }
      if (t.stream == Stream::kHost)
        if (const HostAdamTime h = costs.host_flow(*c); h.memory_s > 0)
          info->host_flows[t.id] = {int64_t(c->bytes_moved()), h.compute_s};
      if (t.stream == Stream::kCompute) {
        info->cost_s[i] += memory_pending_s, memory_pending_s = 0, last_kernel = i;
        if (!memory_pending.empty()) info->memory_ops_of[t.id] = std::move(memory_pending), memory_pending.clear();
      }
      if (t.stream == Stream::kCompute) {
        info->dispatch_s[i] = costs.host_dispatch_s(*c);
      }
      if (c->kernel == Kernel::kLayerNorm || c->kernel == Kernel::kRmsNorm) {
        if (!c->outputs.empty()) norm_out.insert(root(c->outputs[0]));
      } else if (c->kernel == Kernel::kGemm && t.stream == Stream::kCompute && c->inputs.size() == 2) {
        // Transformer Engine's FP8 casts around an FP8 GEMM (sim/compute_cost_model.h): the
        // forward reads x as its first input, the wgrad as its second.
        const BufferId x = c->inputs[(c->flags & kTransA) ? 1 : 0];
        // A forward GEMM's second input is its weight; TE casts it once an iteration (the first
        // micro-batch; a chunked GEMM of the tensor-parallel overlap uses it once per block).
        const bool fwd = !(c->flags & kTransA) && (c->flags & kTransB);
        const bool first_use = fwd && c->phase == Phase::kForward && cast_weights.insert(root(c->inputs[1])).second;
        const auto casts = costs.fp8_casts(*c, norm_out.count(root(x)) > 0, first_use);
        info->cost_s[i] += casts.seconds;
        info->dispatch_s[i] += casts.kernels * costs.dispatch_per_kernel_s();
      }
      info->component[i] = compute_component(*c, t.stream == Stream::kHost);
      const double f = c->matmul_flops();
      info->hardware_flops += f;
      if (c->phase != Phase::kRecompute) info->model_flops += f;
    } else if (const auto* co = std::get_if<Collective>(&t.op)) {
      // A sequence-parallel all-gather of a norm's output feeds the column-parallel GEMM.
      if (co->op == CollectiveOp::kAllGather && co->buffers.size() == 2 && norm_out.count(root(co->buffers[0])))
        norm_out.insert(root(co->buffers[1]));
    } else if (const auto* cp = std::get_if<Copy>(&t.op)) {
      if (cp->direction == CopyDirection::kD2D) info->cost_s[i] = costs.d2d_copy_s(cp->bytes);
      // The overlapped all-gather (shared/tp_overlap.cc) copies the norm's shard into its block
      // of the gathered buffer, whose other blocks arrive from the ring.
      if (cp->direction == CopyDirection::kD2D && norm_out.count(root(cp->src))) norm_out.insert(root(cp->dst));
    }
    if (t.stream == Stream::kCompute && is_compute_like(t))
      info->compute_component_s[static_cast<int>(info->component[i])] += info->cost_s[i];
    BufferId b = kNoId;
    if (const auto* a = std::get_if<Alloc>(&t.op)) b = a->buffer;
    else if (const auto* f = std::get_if<Free>(&t.op)) b = f->buffer;
    else continue;
    const uint32_t bi = index_of(b);
    if (bi == kNoId)
      throw Error("schedule: " + rank_task(program.rank, t.id) + " names buffer " + std::to_string(b) + " that rank does not have");
    info->task_buffer[i] = bi;
    if (host_memory && freed[bi] && !program.buffers[bi].is_view()) {
      info->cost_s[i] = host_memory->time_s(std::holds_alternative<Alloc>(t.op), program.buffers[bi].bytes);
      memory_pending_s += info->cost_s[i];
      memory_pending.push_back(t.id);
    }
  }
  if (last_kernel < n) {  // the Frees after the last kernel
    info->cost_s[last_kernel] += memory_pending_s;
    info->compute_component_s[static_cast<int>(info->component[last_kernel])] += memory_pending_s;
    auto& ops = info->memory_ops_of[TaskId(last_kernel)];
    ops.insert(ops.end(), memory_pending.begin(), memory_pending.end());
  }
  if (!info->memory_ops_of.empty()) {
    info->memory_charged.assign(n, 0);
    for (const auto& entry : info->memory_ops_of)
      for (TaskId m : entry.second) info->memory_charged[m] = 1;
  }
  // Fusion: task u follows t on a stream, both compute-like, nothing on another stream waits on t,
  // and every dependency of u is t, an earlier task of the stream, or a dependency of t (so u is
  // ready the moment t ends).
  for (int s = 0; s < kStreamCount; ++s) {
    const auto& list = info->streams[s];
    for (size_t j = 0; j + 1 < list.size(); ++j) {
      const Task& t = program.tasks[list[j]];
      const Task& u = program.tasks[list[j + 1]];
      if (!is_compute_like(t) || !is_compute_like(u) || waited_on[t.id]) continue;
      if (info->host_flows.count(t.id) || info->host_flows.count(u.id)) continue;
      bool ok = true;
      for (TaskId d : u.deps) {
        if (d == t.id || (program.tasks[d].stream == u.stream && pos[d] < j)) continue;
        if (std::find(t.deps.begin(), t.deps.end(), d) != t.deps.end()) continue;
        ok = false;
        break;
      }
      info->fuse_next[t.id] = ok;
    }
  }
  info->device_bytes.assign(program.buffers.size(), 0);
  for (size_t i = 0; i < program.buffers.size(); ++i) {
    const Buffer& b = program.buffers[i];
    if (!b.is_view() && b.placement == Placement::kDevice) info->device_bytes[i] = b.bytes;
  }
  info->program = std::move(program);
  return info;
}

std::vector<TimedTask> split_memory_time(const ProgramInfo& info, TaskId kernel, double start_s, double end_s) {
  std::vector<TimedTask> out;
  const double gap = info.gap_s.empty() ? 0.0 : info.gap_s[kernel];
  const auto it = info.memory_ops_of.find(kernel);
  if (it == info.memory_ops_of.end()) return {{kernel, start_s + gap, end_s}};
  double before = 0, after = 0;
  for (TaskId m : it->second) (m < kernel ? before : after) += info.cost_s[m];
  double t = start_s;
  for (TaskId m : it->second)
    if (m < kernel) out.push_back({m, t, t + info.cost_s[m]}), t += info.cost_s[m];
  out.push_back({kernel, start_s + before + gap, end_s - after});
  t = end_s - after;
  for (TaskId m : it->second)
    if (m > kernel) out.push_back({m, t, t + info.cost_s[m]}), t += info.cost_s[m];
  return out;
}

}  // namespace tandem::sim
