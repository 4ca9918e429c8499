#include "shared/memory_order.h"

#include <array>
#include <variant>
#include <vector>

namespace tandem {

std::optional<UnorderedFree> first_unordered_free(const Program& p, Placement placement) {
  // Happens-before as vector clocks: seen[t][s] is the last task of stream s that task t waits
  // for (itself on its own stream); tasks of a stream are in program order, so a task u of stream
  // s happens before t when u <= seen[t][s].
  using Clock = std::array<TaskId, kStreamCount>;
  Clock none;
  none.fill(kNoId);
  std::vector<Clock> seen(p.tasks.size(), none);
  std::array<TaskId, kStreamCount> last_on;
  last_on.fill(kNoId);
  auto merge = [](Clock& into, const Clock& from) {
    for (int s = 0; s < kStreamCount; ++s)
      if (from[s] != kNoId && (into[s] == kNoId || from[s] > into[s])) into[s] = from[s];
  };
  // The last Free so far per stream.
  std::array<TaskId, kStreamCount> last_free;
  last_free.fill(kNoId);
  for (const Task& t : p.tasks) {
    const int si = static_cast<int>(t.stream);
    Clock& c = seen[t.id];
    if (last_on[si] != kNoId) c = seen[last_on[si]];
    for (TaskId d : t.deps) merge(c, seen.at(d));
    c[si] = t.id;
    last_on[si] = t.id;
    if (is_pipeline(t.stream)) continue;
    const Alloc* a = std::get_if<Alloc>(&t.op);
    const Free* f = std::get_if<Free>(&t.op);
    if (!a && !f) continue;
    if (p.buffers.at(a ? a->buffer : f->buffer).placement != placement) continue;
    if (f) {
      last_free[si] = t.id;
      continue;
    }
    for (int s = 0; s < kStreamCount; ++s) {
      const TaskId fr = last_free[s];
      if (fr != kNoId && (c[s] == kNoId || c[s] < fr)) return UnorderedFree{fr, t.id};
    }
  }
  return std::nullopt;
}

}  // namespace tandem
