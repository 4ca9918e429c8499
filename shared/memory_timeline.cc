#include "shared/memory_timeline.h"

#include "shared/error.h"
#include "shared/resource_limit.h"
#include "shared/pipeline_memory.h"
#include "shared/rank_grid.h"

namespace tandem {

int64_t MemoryBreakdown::total() const {
  int64_t t = 0;
  for (int64_t b : bytes) t = checked_add(t, b, "a rank's memory");
  return t;
}

void walk_memory(const Program& p,
                 const std::function<void(const Task&, const MemoryBreakdown&, int64_t)>& visit) {
  MemoryBreakdown device;
  int64_t host = 0;
  for (const Task& t : p.tasks) {
    const Alloc* a = std::get_if<Alloc>(&t.op);
    const Free* f = std::get_if<Free>(&t.op);
    if (a || f) {
      const Buffer& b = p.buffers.at(a ? a->buffer : f->buffer);
      if (b.is_view())
        throw Error("rank " + std::to_string(p.rank) + " task " + std::to_string(t.id) + ": allocates view " + b.name);
      const int64_t delta = a ? b.bytes : -b.bytes;
      int64_t& live = b.placement == Placement::kDevice ? device.bytes[static_cast<int>(b.role)] : host;
      live = checked_add(live, delta, "a rank's memory");
    }
    visit(t, device, host);
  }
}

MemoryProfile memory_profile(const Program& p) {
  MemoryProfile prof;
  bool prologue = true;
  walk_memory(p, [&](const Task& t, const MemoryBreakdown& dev, int64_t host) {
    const int64_t total = dev.total();
    if (total > prof.peak_device_bytes) {
      prof.peak_device_bytes = total;
      prof.peak_task = t.id;
      prof.at_peak = dev;
    }
    if (host > prof.peak_host_bytes) prof.peak_host_bytes = host;
    prologue = prologue && std::holds_alternative<Alloc>(t.op) && t.stream == Stream::kCompute;
    if (prologue)
      for (BufferRole r : {BufferRole::kParam, BufferRole::kGrad, BufferRole::kOptimizer})
        prof.model_states.bytes[static_cast<int>(r)] = dev[r];
  });
  return prof;
}

MemoryProfile memory_profile(const Schedule& s, int rank) {
  if (s.grid().pp() == 1) return memory_profile(s.program(rank));
  return pipeline_memory_profiles(s, rank).at(s.grid().coord(rank).pp);
}

}  // namespace tandem
