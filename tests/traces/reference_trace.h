// Realistic test traces without the simulator or MPI: runs a generated schedule on the reference
// executor (shared/reference_executor.h) with a given cost function and records the times, and
// the device/host memory in use after each Alloc and Free (at the task's end), with TraceBuilder.
#pragma once

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "shared/reference_executor.h"
#include "shared/schedule.h"
#include "traces/trace_builder.h"

namespace tandem::testing {

inline proto::Trace reference_trace(const Schedule& s, const TaskCost& cost, const std::string& backend,
                                    const std::string& machine) {
  const ReferenceRun run = run_reference(s, cost);
  TraceBuilder b(s, backend, machine);
  for (int rank = 0; rank < s.world_size(); ++rank) {
    const Program p = s.program(rank);
    b.begin_rank(p);
    std::vector<std::pair<double, const Task*>> memory_changes;
    for (const Task& t : p.tasks) {
      const TaskTime& tt = run.times[rank][t.id];
      b.task(rank, t.id, tt.start_s, tt.end_s);
      if (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op))
        memory_changes.push_back({tt.end_s, &t});
    }
    std::stable_sort(memory_changes.begin(), memory_changes.end(),
                     [](const auto& x, const auto& y) { return x.first < y.first; });
    int64_t device = 0, host = 0;
    b.memory(rank, 0.0, 0, 0);
    for (const auto& [time, t] : memory_changes) {
      const bool alloc = std::holds_alternative<Alloc>(t->op);
      const Buffer& buf = p.buffers[alloc ? std::get<Alloc>(t->op).buffer : std::get<Free>(t->op).buffer];
      if (buf.is_view()) continue;
      int64_t& pool = buf.placement == Placement::kDevice ? device : host;
      pool += alloc ? buf.bytes : -buf.bytes;
      b.memory(rank, time, device, host);
    }
  }
  return b.finish();
}

// Cost A, "the prediction": a roofline of 100 Tflop/s and 1 TB/s for compute, 50 GB/s for
// communication and copies, 2 us of launch latency; allocation and release are free.
inline double prediction_cost(int, const Program&, const Task& t) {
  if (const auto* c = std::get_if<Compute>(&t.op)) return 2e-6 + c->matmul_flops() / 100e12 + c->bytes_moved() / 1e12;
  if (const auto* c = std::get_if<Collective>(&t.op)) return 5e-6 + double(c->bytes) / 50e9;
  if (const auto* r = std::get_if<SendRecv>(&t.op)) return 5e-6 + double(r->bytes) / 50e9;
  if (const auto* c = std::get_if<Copy>(&t.op)) return 5e-6 + double(c->bytes) / 25e9;
  return 0.0;
}

// Cost B, "the measurement": GEMMs 25% slower than A, collectives 1.5x slower with 20 us more
// latency, attention 10% faster, the rest as A.
inline double measurement_cost(int rank, const Program& p, const Task& t) {
  const double a = prediction_cost(rank, p, t);
  if (const auto* c = std::get_if<Compute>(&t.op)) {
    if (c->kernel == Kernel::kGemm) return a * 1.25;
    if (c->kernel == Kernel::kAttention || c->kernel == Kernel::kAttentionBwd) return a * 0.9;
    return a;
  }
  if (std::holds_alternative<Collective>(t.op)) return a * 1.5 + 20e-6;
  return a;
}

}  // namespace tandem::testing
