#include "shared/reference_executor.h"

#include <algorithm>
#include <map>
#include <tuple>

#include "shared/error.h"

namespace tandem {
namespace {

constexpr double kUnknown = -1;

struct RankState {
  Program program;
  std::vector<double> end;                        // kUnknown until finished
  std::vector<std::vector<TaskId>> streams;       // task ids per stream
  std::vector<size_t> head;                       // next task per stream
  std::map<GroupId, int> collective_seq;          // collectives issued per group
  std::map<std::tuple<int, int, bool>, int> p2p_seq;  // (peer, tag, is_send) -> count
};

// Where the k-th collective of a group, or the k-th message of a pair, waits for its partners.
struct Rendezvous {
  std::vector<std::pair<int, TaskId>> arrived;  // (rank, task)
  double ready_s = 0;
};

}  // namespace

ReferenceRun run_reference(const Schedule& s, const TaskCost& cost) {
  const int world = s.world_size();
  std::vector<RankState> ranks(world);
  size_t remaining = 0;
  for (int r = 0; r < world; ++r) {
    RankState& rs = ranks[r];
    rs.program = s.program(r);
    rs.end.assign(rs.program.tasks.size(), kUnknown);
    rs.streams.assign(kStreamCount, {});
    rs.head.assign(kStreamCount, 0);
    for (const Task& t : rs.program.tasks) rs.streams[static_cast<int>(t.stream)].push_back(t.id);
    remaining += rs.program.tasks.size();
  }
  std::map<std::pair<GroupId, int>, Rendezvous> collectives;
  std::map<std::tuple<int, int, int, int>, Rendezvous> messages;  // (src, dst, tag, seq)
  std::vector<std::vector<double>> ready_at(world);
  for (int r = 0; r < world; ++r) ready_at[r].assign(ranks[r].program.tasks.size(), kUnknown);

  auto finish = [&](int r, TaskId id, double start) {
    ranks[r].end[id] = start + cost(r, ranks[r].program, ranks[r].program.tasks[id]);
    --remaining;
  };

  bool progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (int r = 0; r < world; ++r) {
      RankState& rs = ranks[r];
      for (int k = 0; k < kStreamCount; ++k) {
        while (rs.head[k] < rs.streams[k].size()) {
          const TaskId id = rs.streams[k][rs.head[k]];
          const Task& t = rs.program.tasks[id];
          double ready = rs.head[k] > 0 ? rs.end[rs.streams[k][rs.head[k] - 1]] : 0;
          bool blocked = false;
          for (TaskId d : t.deps) {
            if (rs.end[d] == kUnknown) blocked = true;
            else ready = std::max(ready, rs.end[d]);
          }
          if (blocked) break;
          if (const Collective* c = std::get_if<Collective>(&t.op)) {
            if (ready_at[r][id] == kUnknown) {  // arrive once
              ready_at[r][id] = ready;
              const int seq = rs.collective_seq[c->group]++;
              Rendezvous& rv = collectives[{c->group, seq}];
              rv.arrived.push_back({r, id});
              rv.ready_s = std::max(rv.ready_s, ready);
              if (rv.arrived.size() == s.group(c->group).ranks.size()) {
                for (auto [rr, tid] : rv.arrived) finish(rr, tid, rv.ready_s);
                progress = true;
              }
            }
            if (rs.end[id] == kUnknown) break;
          } else if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) {
            if (ready_at[r][id] == kUnknown) {
              ready_at[r][id] = ready;
              const int seq = rs.p2p_seq[{m->peer, m->tag, m->is_send}]++;
              const int src = m->is_send ? r : m->peer, dst = m->is_send ? m->peer : r;
              Rendezvous& rv = messages[{src, dst, m->tag, seq}];
              rv.arrived.push_back({r, id});
              rv.ready_s = std::max(rv.ready_s, ready);
              if (rv.arrived.size() == 2) {
                for (auto [rr, tid] : rv.arrived) finish(rr, tid, rv.ready_s);
                progress = true;
              }
            }
            if (rs.end[id] == kUnknown) break;
          } else {
            finish(r, id, ready);
            progress = true;
          }
          ++rs.head[k];
        }
      }
    }
  }
  if (remaining > 0) {
    std::string msg = "reference executor: deadlock, " + std::to_string(remaining) + " tasks cannot run;";
    int shown = 0;
    for (int r = 0; r < world && shown < 8; ++r)
      for (int k = 0; k < kStreamCount && shown < 8; ++k)
        if (ranks[r].head[k] < ranks[r].streams[k].size()) {
          msg += " rank " + std::to_string(r) + " " + to_string(static_cast<Stream>(k)) + " waits at task " +
                 std::to_string(ranks[r].streams[k][ranks[r].head[k]]) + ";";
          ++shown;
        }
    throw Error(msg);
  }
  ReferenceRun run;
  run.times.resize(world);
  for (int r = 0; r < world; ++r) {
    const Program& p = ranks[r].program;
    run.times[r].resize(p.tasks.size());
    for (const Task& t : p.tasks) {
      const double end = ranks[r].end[t.id];
      run.times[r][t.id] = {end - cost(r, p, t), end};
      run.makespan_s = std::max(run.makespan_s, end);
    }
  }
  return run;
}

}  // namespace tandem
