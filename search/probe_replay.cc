#include "search/probe_replay.h"

#include <algorithm>
#include <array>
#include <deque>
#include <map>
#include <string>
#include <tuple>
#include <utility>

#include "shared/error.h"

namespace tandem::search {

namespace {

struct Party {
  int rank;
  TaskId task;
};

struct PairQueue {
  std::deque<Party> sends, recvs;
};

}  // namespace

std::vector<TaskTimes> replay_programs(const std::vector<ProcessGroup>& groups, const std::vector<Program>& programs,
                                       const ReplayCosts& costs) {
  const int ranks = int(programs.size());
  std::vector<TaskTimes> times(ranks);
  std::vector<std::array<std::vector<TaskId>, kStreamCount>> streams(ranks);
  std::vector<std::array<size_t, kStreamCount>> next(ranks);
  std::vector<std::vector<uint8_t>> posted(ranks);
  std::vector<std::map<GroupId, uint32_t>> issued(ranks);  // collectives posted per group
  size_t total = 0, ended = 0;
  for (int r = 0; r < ranks; ++r) {
    const size_t n = programs[r].tasks.size();
    total += n;
    times[r].start_s.assign(n, -1.0);
    times[r].end_s.assign(n, -1.0);
    posted[r].assign(n, 0);
    next[r].fill(0);
    for (const Task& t : programs[r].tasks) streams[r][static_cast<int>(t.stream)].push_back(t.id);
  }
  // Posted collectives by (group, sequence number), and messages by (src, dst), not yet matched.
  std::map<std::pair<GroupId, uint32_t>, std::vector<Party>> collectives;
  std::map<std::pair<int, int>, PairQueue> pairs;
  const auto finish = [&](const std::vector<Party>& parties, double start, double seconds) {
    for (const Party& p : parties) {
      times[p.rank].start_s[p.task] = start;
      times[p.rank].end_s[p.task] = start + seconds;
      ++ended;
    }
  };

  for (bool progress = true; progress;) {
    progress = false;
    for (int r = 0; r < ranks; ++r) {
      const Program& program = programs[r];
      TaskTimes& tt = times[r];
      for (int s = 0; s < kStreamCount; ++s) {
        const std::vector<TaskId>& order = streams[r][s];
        size_t& at = next[r][s];
        while (at < order.size()) {
          const TaskId id = order[at];
          if (posted[r][id]) {  // waiting for its match
            if (tt.end_s[id] < 0) break;
            ++at;
            progress = true;
            continue;
          }
          const Task& t = program.tasks[id];
          double ready = at > 0 ? tt.end_s[order[at - 1]] : 0.0;
          bool waiting = false;
          for (TaskId d : t.deps) {
            if (tt.end_s[d] < 0) {
              waiting = true;
              break;
            }
            ready = std::max(ready, tt.end_s[d]);
          }
          if (waiting) break;
          posted[r][id] = 1;
          tt.start_s[id] = ready;  // the post; a matched operation's start is set when it matches
          progress = true;
          if (const auto* c = std::get_if<Collective>(&t.op)) {
            const std::vector<int>& members = groups.at(c->group).ranks;
            auto& parties = collectives[{c->group, issued[r][c->group]++}];
            parties.push_back({r, id});
            if (parties.size() == members.size()) {
              double start = 0;
              for (const Party& p : parties) start = std::max(start, times[p.rank].start_s[p.task]);
              finish(parties, start, costs.collective(*c, members));
              collectives.erase({c->group, issued[r][c->group] - 1});
            }
          } else if (const auto* m = std::get_if<SendRecv>(&t.op)) {
            const int src = m->is_send ? r : m->peer, dst = m->is_send ? m->peer : r;
            PairQueue& q = pairs[{src, dst}];
            auto& theirs = m->is_send ? q.recvs : q.sends;
            if (theirs.empty()) {
              (m->is_send ? q.sends : q.recvs).push_back({r, id});
            } else {
              const Party other = theirs.front();
              theirs.pop_front();
              const double start = std::max(ready, times[other.rank].start_s[other.task]);
              finish({other, {r, id}}, start, costs.p2p(src, dst, *m));
            }
          } else {
            finish({{r, id}}, ready, costs.own(t));
          }
          if (tt.end_s[id] < 0) break;
          ++at;
        }
      }
    }
  }
  if (ended != total)
    throw Error("search: internal: a layer probe's programs do not finish (" + std::to_string(total - ended) +
                    " of " + std::to_string(total) + " tasks never ran: an unmatched collective or message)",
                ErrorKind::kInternal);
  return times;
}

TaskTimes replay_symmetric(const std::vector<ProcessGroup>& groups, const Program& program, const ReplayCosts& costs) {
  const size_t n = program.tasks.size();
  TaskTimes tt;
  tt.start_s.assign(n, -1.0);
  tt.end_s.assign(n, -1.0);
  std::array<std::vector<TaskId>, kStreamCount> streams;
  std::array<size_t, kStreamCount> next{};
  std::vector<uint8_t> posted(n, 0);
  for (const Task& t : program.tasks) streams[static_cast<int>(t.stream)].push_back(t.id);
  const int self = program.rank;
  // A peer's place relative to this rank: (group, places ahead) for a send, (group, places behind)
  // for a receive, in the first group of both with more than one rank.
  std::map<int, std::pair<GroupId, std::pair<int, int>>> place_of;  // peer -> group, (self's index, peer's)
  const auto place = [&](int peer, bool send) {
    auto it = place_of.find(peer);
    if (it == place_of.end()) {
      for (const ProcessGroup& g : groups) {
        if (g.ranks.size() < 2) continue;
        const auto a = std::find(g.ranks.begin(), g.ranks.end(), self), b = std::find(g.ranks.begin(), g.ranks.end(), peer);
        if (a == g.ranks.end() || b == g.ranks.end()) continue;
        it = place_of.emplace(peer, std::make_pair(g.id, std::make_pair(int(a - g.ranks.begin()), int(b - g.ranks.begin())))).first;
        break;
      }
      if (it == place_of.end())
        throw Error("search: internal: rank " + std::to_string(self) + " exchanges with rank " + std::to_string(peer) +
                        " in no group of both",
                    ErrorKind::kInternal);
    }
    const int size = int(groups.at(it->second.first).ranks.size());
    const auto [mine, theirs] = it->second.second;
    const int ahead = ((send ? theirs - mine : mine - theirs) % size + size) % size;
    return std::make_pair(it->second.first, ahead);
  };
  using Key = std::tuple<GroupId, int, uint32_t>;
  std::map<std::pair<GroupId, int>, uint32_t> sends, recvs;  // posted so far by (group, places)
  std::map<Key, TaskId> waiting_sends, waiting_recvs;
  size_t ended = 0;
  const auto finish = [&](TaskId id, double start, double seconds) {
    tt.start_s[id] = start;
    tt.end_s[id] = start + seconds;
    ++ended;
  };
  for (bool progress = true; progress;) {
    progress = false;
    for (int s = 0; s < kStreamCount; ++s) {
      const std::vector<TaskId>& order = streams[s];
      size_t& at = next[s];
      while (at < order.size()) {
        const TaskId id = order[at];
        if (posted[id]) {
          if (tt.end_s[id] < 0) break;
          ++at;
          progress = true;
          continue;
        }
        const Task& t = program.tasks[id];
        double ready = at > 0 ? tt.end_s[order[at - 1]] : 0.0;
        bool waiting = false;
        for (TaskId d : t.deps) {
          if (tt.end_s[d] < 0) {
            waiting = true;
            break;
          }
          ready = std::max(ready, tt.end_s[d]);
        }
        if (waiting) break;
        posted[id] = 1;
        tt.start_s[id] = ready;
        progress = true;
        if (const auto* c = std::get_if<Collective>(&t.op)) {
          finish(id, ready, costs.collective(*c, groups.at(c->group).ranks));
        } else if (const auto* m = std::get_if<SendRecv>(&t.op)) {
          const auto [group, places] = place(m->peer, m->is_send);
          const Key key{group, places, (m->is_send ? sends : recvs)[{group, places}]++};
          auto& theirs = m->is_send ? waiting_recvs : waiting_sends;
          auto other = theirs.find(key);
          if (other == theirs.end()) {
            (m->is_send ? waiting_sends : waiting_recvs).emplace(key, id);
          } else {
            const TaskId o = other->second;
            theirs.erase(other);
            const double start = std::max(ready, tt.start_s[o]);
            const int src = m->is_send ? self : m->peer, dst = m->is_send ? m->peer : self;
            const double seconds = costs.p2p(src, dst, *m);
            finish(id, start, seconds);
            finish(o, start, seconds);
          }
        } else {
          finish(id, ready, costs.own(t));
        }
        if (tt.end_s[id] < 0) break;
        ++at;
      }
    }
  }
  if (ended != n)
    throw Error("search: internal: a layer probe's program does not finish (" + std::to_string(n - ended) + " of " +
                    std::to_string(n) + " tasks never ran: a message without its pair)",
                ErrorKind::kInternal);
  return tt;
}

}  // namespace tandem::search
