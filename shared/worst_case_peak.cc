#include "shared/worst_case_peak.h"

#include <map>
#include <tuple>

#include "shared/error.h"
#include "shared/max_closure.h"
#include "shared/resource_limit.h"

namespace tandem {
namespace {

using Requirement = std::pair<uint32_t, uint32_t>;

// The stream a receive matching a send on `s` arrives on.
Stream matching_receive(Stream s) { return s == Stream::kSendFwd ? Stream::kRecvFwd : Stream::kRecvBwd; }

}  // namespace

int64_t worst_case_device_peak(const Schedule& s, const std::vector<Program>& programs, int rank) {
  // Node 2t of program i's block is task t's start, 2t + 1 its end.
  std::vector<uint32_t> base(programs.size());
  std::map<int, size_t> index_of;  // global rank -> program
  size_t nodes = 0;
  for (size_t i = 0; i < programs.size(); ++i) {
    base[i] = uint32_t(nodes);
    nodes += 2 * programs[i].tasks.size();
    if (!index_of.emplace(programs[i].rank, i).second)
      throw Error("worst-case peak: rank " + std::to_string(programs[i].rank) + " is given twice");
  }
  if (!index_of.count(rank)) throw Error("worst-case peak: rank " + std::to_string(rank) + " is not among the programs");
  auto start = [&](size_t i, TaskId t) { return base[i] + 2 * t; };
  auto end = [&](size_t i, TaskId t) { return base[i] + 2 * t + 1; };

  std::vector<Requirement> req;
  // Sends and receives per (sender, receiver, stream of the send), and collectives per (rank,
  // group), in program order: the n-th of one side matches the n-th of the other.
  std::map<std::tuple<int, int, Stream>, std::vector<TaskId>> sends, receives;
  std::map<std::pair<int, GroupId>, std::vector<TaskId>> collectives;
  for (size_t i = 0; i < programs.size(); ++i) {
    const Program& p = programs[i];
    std::vector<TaskId> last_on_stream(kStreamCount, kNoId);
    TaskId last_memory_op = kNoId;
    for (const Task& t : p.tasks) {
      if (t.id >= p.tasks.size() || &p.tasks[t.id] != &t)
        throw Error("worst-case peak: rank " + std::to_string(p.rank) + ": task ids are not program indices");
      req.push_back({end(i, t.id), start(i, t.id)});
      for (TaskId d : t.deps) req.push_back({start(i, t.id), end(i, d)});
      TaskId& prev = last_on_stream[static_cast<int>(t.stream)];
      if (prev != kNoId) req.push_back({start(i, t.id), end(i, prev)});
      prev = t.id;
      const bool memory_op = std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op);
      if (memory_op && !is_pipeline(t.stream)) {
        if (last_memory_op != kNoId) req.push_back({start(i, t.id), end(i, last_memory_op)});
        last_memory_op = t.id;
      }
      if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) {
        if (m->is_send) sends[{p.rank, m->peer, t.stream}].push_back(t.id);
        else receives[{m->peer, p.rank, t.stream}].push_back(t.id);
      }
      if (const Collective* c = std::get_if<Collective>(&t.op)) collectives[{p.rank, c->group}].push_back(t.id);
    }
  }
  for (const auto& [key, ids] : sends) {
    const auto& [from, to, stream] = key;
    const auto peer = index_of.find(to);
    const auto it = receives.find({from, to, matching_receive(stream)});
    if (peer == index_of.end() || it == receives.end()) continue;
    const size_t i = index_of.at(from), j = peer->second;
    for (size_t n = 0; n < ids.size() && n < it->second.size(); ++n)
      req.push_back({end(j, it->second[n]), start(i, ids[n])});
  }
  for (const auto& [key, ids] : collectives) {
    const auto& [member, group] = key;
    const size_t i = index_of.at(member);
    for (int other : s.group(group).ranks) {
      const auto j = index_of.find(other);
      if (other == member || j == index_of.end()) continue;
      const auto it = collectives.find({other, group});
      if (it == collectives.end()) continue;
      for (size_t n = 0; n < ids.size() && n < it->second.size(); ++n)
        req.push_back({end(i, ids[n]), start(j->second, it->second[n])});
    }
  }

  // The rank's device Allocs (+) and Frees (-) at their starts; persistent buffers apart.
  const size_t me = index_of.at(rank);
  const Program& p = programs[me];
  std::vector<int> allocs(p.buffers.size(), 0), frees(p.buffers.size(), 0);
  for (const Task& t : p.tasks) {
    if (const Alloc* a = std::get_if<Alloc>(&t.op)) ++allocs.at(a->buffer);
    if (const Free* f = std::get_if<Free>(&t.op)) ++frees.at(f->buffer);
  }
  std::vector<int64_t> weight(nodes, 0);
  int64_t persistent = 0;
  for (const Task& t : p.tasks) {
    const Alloc* a = std::get_if<Alloc>(&t.op);
    const Free* f = std::get_if<Free>(&t.op);
    if (!a && !f) continue;
    const BufferId id = a ? a->buffer : f->buffer;
    const Buffer& b = p.buffers.at(id);
    if (b.placement != Placement::kDevice) continue;
    if (allocs[id] > 0 && frees[id] == 0) persistent = checked_add(persistent, b.bytes, "a rank's memory");
    else weight[start(me, t.id)] += a ? b.bytes : -b.bytes;
  }
  return checked_add(persistent, max_closure_weight(weight, req), "a rank's memory");
}

}  // namespace tandem
