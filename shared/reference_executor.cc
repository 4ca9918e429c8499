#include "shared/reference_executor.h"

#include <algorithm>
#include <map>
#include <tuple>
#include <unordered_map>

#include "shared/error.h"

namespace tandem {
namespace {

constexpr double kUnknown = -1;

enum class Kind : uint8_t { kLocal, kCollective, kSend, kRecv };
constexpr uint8_t kArrived = 0x80;  // or-ed into a task's kind once it has joined its rendezvous

// What the run needs of a collective or a message.
struct CommInfo {
  GroupId group = kNoId;  // a collective's; a translated message's group (translated_peers)
  int peer = -1;          // a message's peer; a translated message's places (Translation)
  int tag = 0;
};

// One rank's program reduced to what timing needs (about 40 bytes a task).
struct RankState {
  int rank = -1;
  std::vector<uint32_t> dep_begin;  // deps of task i: deps[dep_begin[i] .. dep_begin[i+1])
  std::vector<TaskId> deps;
  std::vector<double> cost;
  std::vector<TaskTime>* times = nullptr;    // the run's output; end_s is kUnknown until finished
  std::vector<uint8_t> kind;                 // Kind, | kArrived
  std::unordered_map<TaskId, CommInfo> comm;  // collectives and messages
  std::vector<std::vector<TaskId>> streams;  // task ids per stream
  std::vector<size_t> head;                  // next task per stream
  std::map<GroupId, int> collective_seq;     // collectives issued per group
  std::map<std::tuple<int, int, bool>, int> p2p_seq;  // (peer, tag, is_send) -> count
  std::map<std::tuple<GroupId, int, int, bool>, int> translated_seq;  // (group, places, tag, is_send) -> count

  size_t size() const { return cost.size(); }
};

// Where the k-th collective of a group, or the k-th message of a pair, waits for its partners.
struct Rendezvous {
  std::vector<std::pair<int, TaskId>> arrived;  // (index of the rank in the run, task)
  double ready_s = 0;
};

// A message's partner under ReferenceOptions::translated_peers: the first group of both ranks with
// more than one member, and the peer's places ahead of `self` there (a send) or behind (a receive).
struct Translation {
  GroupId group = kNoId;
  int places = 0;
};

Translation translate(const std::vector<ProcessGroup>& groups, int self, int peer, bool send) {
  for (const ProcessGroup& g : groups) {
    if (g.ranks.size() < 2) continue;
    const auto a = std::find(g.ranks.begin(), g.ranks.end(), self), b = std::find(g.ranks.begin(), g.ranks.end(), peer);
    if (a == g.ranks.end() || b == g.ranks.end()) continue;
    const int size = int(g.ranks.size()), mine = int(a - g.ranks.begin()), theirs = int(b - g.ranks.begin());
    return {g.id, ((send ? theirs - mine : mine - theirs) % size + size) % size};
  }
  throw Error("reference executor: rank " + std::to_string(self) + " exchanges with rank " + std::to_string(peer) +
              " in no group of both");
}

RankState load(const Program& p, const std::vector<ProcessGroup>& groups, const TaskCost& cost,
               const ReferenceOptions& o, const std::vector<int>& index_of, std::vector<TaskTime>& times) {
  const int rank = p.rank;
  if (o.on_program) o.on_program(p);
  RankState rs;
  rs.rank = rank;
  const size_t n = p.tasks.size();
  rs.dep_begin.reserve(n + 1);
  rs.deps.reserve(2 * n);
  rs.cost.reserve(n);
  rs.kind.reserve(n);
  rs.streams.assign(kStreamCount, {});
  rs.head.assign(kStreamCount, 0);
  TaskId last_memory_op = kNoId;  // the previous Alloc/Free off the pipeline streams
  for (const Task& t : p.tasks) {
    if (t.id != rs.cost.size())
      throw Error("reference executor: rank " + std::to_string(rank) + ": task ids are not program indices");
    rs.dep_begin.push_back(uint32_t(rs.deps.size()));
    rs.deps.insert(rs.deps.end(), t.deps.begin(), t.deps.end());
    const bool memory_op = std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op);
    if (o.memory_in_program_order && memory_op && !is_pipeline(t.stream)) {
      if (last_memory_op != kNoId) rs.deps.push_back(last_memory_op);
      last_memory_op = t.id;
    }
    rs.cost.push_back(cost(rank, p, t));
    Kind k = Kind::kLocal;
    if (const Collective* c = std::get_if<Collective>(&t.op)) {
      k = Kind::kCollective;
      rs.comm[t.id] = {c->group, -1, 0};
    } else if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) {
      if (m->peer < 0 || m->peer >= int(index_of.size()))
        throw Error("reference executor: rank " + std::to_string(rank) + " task " + std::to_string(t.id) +
                    ": its peer " + std::to_string(m->peer) + " is outside the world");
      if (index_of[m->peer] >= 0) {  // else a peer not run, met on time (ReferenceOptions::ranks)
        k = m->is_send ? Kind::kSend : Kind::kRecv;
        rs.comm[t.id] = {kNoId, m->peer, m->tag};
      } else if (o.translated_peers) {  // matched with this rank's own opposite message
        k = m->is_send ? Kind::kSend : Kind::kRecv;
        const Translation tr = translate(groups, rank, m->peer, m->is_send);
        rs.comm[t.id] = {tr.group, tr.places, m->tag};
      }
    }
    rs.kind.push_back(uint8_t(k));
    rs.streams[static_cast<int>(t.stream)].push_back(t.id);
  }
  rs.dep_begin.push_back(uint32_t(rs.deps.size()));
  rs.deps.shrink_to_fit();
  times.assign(n, {kUnknown, kUnknown});
  rs.times = &times;
  return rs;
}

// The run of `run_ranks`, program_of(i, scratch) giving run_ranks[i]'s program (generated into
// `scratch` or the caller's own), each reduced to what timing needs before the next.
ReferenceRun execute(int world, const std::vector<ProcessGroup>& groups, const std::vector<int>& run_ranks,
                     const std::function<const Program&(size_t, Program& scratch)>& program_of, const TaskCost& cost,
                     const ReferenceOptions& o) {
  if (o.translated_peers && run_ranks.size() != 1)
    throw Error("reference executor: translated peers need exactly one rank run, not " + std::to_string(run_ranks.size()));
  std::vector<int> index_of(world, -1);
  for (size_t i = 0; i < run_ranks.size(); ++i) {
    const int r = run_ranks[i];
    if (r < 0 || r >= world || index_of[r] >= 0)
      throw Error("reference executor: rank " + std::to_string(r) + " is not a rank of the schedule or is named twice");
    index_of[r] = int(i);
  }
  const int n_run = int(run_ranks.size());
  ReferenceRun run;
  run.times.resize(world);
  std::vector<RankState> ranks;
  ranks.reserve(n_run);
  size_t remaining = 0;
  for (size_t i = 0; i < run_ranks.size(); ++i) {
    Program scratch;
    const Program& p = program_of(i, scratch);
    if (p.rank != run_ranks[i])
      throw Error("reference executor: the program of rank " + std::to_string(run_ranks[i]) + " says rank " +
                  std::to_string(p.rank));
    ranks.push_back(load(p, groups, cost, o, index_of, run.times[run_ranks[i]]));
    remaining += ranks.back().size();
  }
  // Members of each group among the ranks run: a collective's rendezvous size.
  std::vector<int> members(groups.size(), -1);
  auto members_running = [&](GroupId g) {
    if (members.at(g) < 0) {
      members[g] = 0;
      for (int r : groups.at(g).ranks) members[g] += index_of.at(r) >= 0;
    }
    return size_t(members[g]);
  };
  std::map<std::pair<GroupId, int>, Rendezvous> collectives;
  std::map<std::tuple<int, int, int, int>, Rendezvous> messages;  // (src, dst, tag, seq)
  std::map<std::tuple<GroupId, int, int, int>, Rendezvous> translated;  // (group, places, tag, seq)

  auto finish = [&](int i, TaskId id, double start) {
    const double end = start + ranks[i].cost[id];
    (*ranks[i].times)[id] = {start, end};
    run.makespan_s = std::max(run.makespan_s, end);
    --remaining;
  };

  bool progress = true;
  while (remaining > 0 && progress) {
    progress = false;
    for (int i = 0; i < n_run; ++i) {
      RankState& rs = ranks[i];
      const std::vector<TaskTime>& times = *rs.times;
      for (int k = 0; k < kStreamCount; ++k) {
        while (rs.head[k] < rs.streams[k].size()) {
          const TaskId id = rs.streams[k][rs.head[k]];
          double ready = rs.head[k] > 0 ? times[rs.streams[k][rs.head[k] - 1]].end_s : 0;
          bool blocked = false;
          for (uint32_t j = rs.dep_begin[id]; j < rs.dep_begin[id + 1]; ++j) {
            const double e = times[rs.deps[j]].end_s;
            if (e == kUnknown) {
              blocked = true;
              break;
            }
            ready = std::max(ready, e);
          }
          if (blocked) break;
          const Kind kind = Kind(rs.kind[id] & ~kArrived);
          if (kind == Kind::kLocal) {
            finish(i, id, ready);
            progress = true;
            ++rs.head[k];
            continue;
          }
          if (!(rs.kind[id] & kArrived)) {  // arrive once
            rs.kind[id] |= kArrived;
            const CommInfo& c = rs.comm.at(id);
            Rendezvous* rv;
            size_t expected;
            if (kind == Kind::kCollective) {
              rv = &collectives[{c.group, rs.collective_seq[c.group]++}];
              expected = members_running(c.group);
            } else if (c.group != kNoId) {  // translated_peers: the pair is this rank's own
              const bool send = kind == Kind::kSend;
              const int seq = rs.translated_seq[{c.group, c.peer, c.tag, send}]++;
              rv = &translated[{c.group, c.peer, c.tag, seq}];
              expected = 2;
            } else {
              const bool send = kind == Kind::kSend;
              const int seq = rs.p2p_seq[{c.peer, c.tag, send}]++;
              rv = &messages[{send ? rs.rank : c.peer, send ? c.peer : rs.rank, c.tag, seq}];
              expected = 2;
            }
            rv->arrived.push_back({i, id});
            rv->ready_s = std::max(rv->ready_s, ready);
            if (rv->arrived.size() == expected) {
              for (auto [ri, tid] : rv->arrived) finish(ri, tid, rv->ready_s);
              progress = true;
            }
          }
          if (times[id].end_s == kUnknown) break;
          ++rs.head[k];
        }
      }
    }
  }
  if (remaining > 0) {
    std::string msg = "reference executor: deadlock, " + std::to_string(remaining) + " tasks cannot run;";
    int shown = 0;
    for (int i = 0; i < n_run && shown < 8; ++i)
      for (int k = 0; k < kStreamCount && shown < 8; ++k)
        if (ranks[i].head[k] < ranks[i].streams[k].size()) {
          msg += " rank " + std::to_string(ranks[i].rank) + " " + to_string(static_cast<Stream>(k)) +
                 " waits at task " + std::to_string(ranks[i].streams[k][ranks[i].head[k]]) + ";";
          ++shown;
        }
    throw Error(msg);
  }
  return run;
}

}  // namespace

ReferenceRun run_reference(const Schedule& s, const TaskCost& cost, const ReferenceOptions& o) {
  std::vector<int> run_ranks = o.ranks;
  if (run_ranks.empty())
    for (int r = 0; r < s.world_size(); ++r) run_ranks.push_back(r);
  return execute(s.world_size(), s.groups(), run_ranks,
                 [&](size_t i, Program& scratch) -> const Program& { return scratch = s.program(run_ranks[i]); }, cost, o);
}

ReferenceRun run_reference(int world, const std::vector<ProcessGroup>& groups, const std::vector<Program>& programs,
                           const TaskCost& cost, const ReferenceOptions& o) {
  if (!o.ranks.empty()) throw Error("reference executor: the given programs' ranks are the ranks run; options.ranks must be empty");
  std::vector<int> run_ranks;
  for (const Program& p : programs) run_ranks.push_back(p.rank);
  return execute(world, groups, run_ranks, [&](size_t i, Program&) -> const Program& { return programs[i]; }, cost, o);
}

}  // namespace tandem
