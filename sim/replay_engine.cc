#include "sim/replay_engine.h"

#include <algorithm>
#include <cmath>
#include <deque>
#include <sstream>

#include "shared/error.h"
#include "shared/rank_grid.h"

namespace tandem::sim {
namespace sg = simgrid::s4u;

struct ReplayEngine::ProgramInfo {
  Program program;
  std::array<std::vector<TaskId>, kStreamCount> streams;
  std::vector<double> cost_s;        // compute, host work and device copies
  std::vector<uint8_t> fuse_next;    // the next task of this one's stream runs fused after it
  std::unordered_map<BufferId, uint32_t> buffer_index;
  std::vector<uint32_t> task_buffer;  // Alloc/Free: index of the buffer in `program.buffers`
  std::vector<int64_t> device_bytes;  // by buffer index: bytes of an accounted device buffer, else 0
  double model_flops = 0, hardware_flops = 0;
};

struct ReplayEngine::RankState {
  int rank = 0;  // the rank replayed (folded: lane 0 of its unit)
  int unit = 0;  // index in ranks_
  const ProgramInfo* info = nullptr;
  bool translate = false;  // the program is its class representative's: translate groups and peers
  std::vector<uint64_t> done;
  std::array<uint32_t, kStreamCount> cursor{};
  std::array<double, kStreamCount> busy_since{};
  uint32_t busy = 0;
  std::vector<std::pair<GroupId, uint32_t>> seq;  // collectives issued, per group
  std::vector<GroupId> group_map;                  // translated groups, by the program's group id
  std::vector<uint8_t> live;
  int64_t device_bytes = 0, host_bytes = 0;
  size_t remaining = 0;
  double last_t = 0;
  int computing = 0, communicating = 0, offloading = 0;
  RankStats stats;
};

struct ReplayEngine::NetOp {
  enum Kind : uint8_t { kCollective, kP2P, kCopy };
  Kind kind = kCollective;
  bool in_use = false;
  std::vector<Party> parties;
  size_t expected = 0;
  GroupId group = kNoId;
  const Collective* collective = nullptr;
  int src = 0, dst = 0;  // p2p ranks; copy: src = the GPU
  int64_t bytes = 0;
  int32_t tag = 0;
  CopyDirection direction = CopyDirection::kH2D;
  std::shared_ptr<const CollectivePlan> plan;
  ProtocolCost cost;
  size_t phase = 0;
  uint32_t outstanding = 0;
  // Folded: flows of all tp lanes, lane-major, `lane_flows` per lane. Only lane 0's flows are
  // waited on; lane m's (kept in `shadows`, lane-major from lane 1) must have ended with them.
  uint32_t lanes = 1;
  uint32_t lane_flows = 0;
  std::vector<simgrid::s4u::CommPtr> shadows;
};

struct ReplayEngine::PairQueue {
  std::deque<uint32_t> sends, recvs;  // ops posted by one side, waiting for the other
};

namespace {

constexpr uint32_t kLateFlow = 0x80000000u;  // active_slot_: a lane m > 0 flow that outlived lane 0's

bool test_bit(const std::vector<uint64_t>& v, uint32_t i) { return (v[i >> 6] >> (i & 63)) & 1; }
void set_bit(std::vector<uint64_t>& v, uint32_t i) { v[i >> 6] |= uint64_t(1) << (i & 63); }

bool is_compute_like(const Task& t) {
  return std::holds_alternative<Compute>(t.op) ||
         (std::holds_alternative<Copy>(t.op) && std::get<Copy>(t.op).direction == CopyDirection::kD2D);
}

std::string rank_task(int rank, TaskId t) { return "rank " + std::to_string(rank) + " task " + std::to_string(t); }

}  // namespace

ReplayEngine::ReplayEngine(const Schedule& schedule, const SimOptions& options, const Platform& platform,
                           const FabricModel& fabric, const ComputeCostModel& costs, NcclTuner& tuner)
    : schedule_(schedule), options_(options), platform_(platform), fabric_(fabric), costs_(costs), tuner_(tuner) {}

ReplayEngine::~ReplayEngine() = default;

std::shared_ptr<ReplayEngine::ProgramInfo> ReplayEngine::analyse(Program program) const {
  auto info = std::make_shared<ProgramInfo>();
  const size_t n = program.tasks.size();
  info->cost_s.assign(n, 0.0);
  info->fuse_next.assign(n, 0);
  info->task_buffer.assign(n, 0);
  std::vector<uint8_t> waited_on(n, 0);
  std::vector<uint32_t> pos(n, 0);
  for (size_t i = 0; i < program.buffers.size(); ++i) info->buffer_index[program.buffers[i].id] = uint32_t(i);
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
      info->cost_s[i] = costs_.time_s(*c, t.stream == Stream::kHost);
      const double f = c->matmul_flops();
      info->hardware_flops += f;
      if (c->phase != Phase::kRecompute) info->model_flops += f;
    } else if (const auto* cp = std::get_if<Copy>(&t.op)) {
      if (cp->direction == CopyDirection::kD2D) info->cost_s[i] = costs_.d2d_copy_s(cp->bytes);
    }
    for (BufferId b : [&]() -> std::vector<BufferId> {
           if (const auto* a = std::get_if<Alloc>(&t.op)) return {a->buffer};
           if (const auto* f = std::get_if<Free>(&t.op)) return {f->buffer};
           return {};
         }())
    {
      auto it = info->buffer_index.find(b);
      if (it == info->buffer_index.end())
        throw Error("schedule: " + rank_task(program.rank, t.id) + " names buffer " + std::to_string(b) + " that rank does not have");
      info->task_buffer[i] = it->second;
    }
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

void ReplayEngine::prepare() {
  const int n = schedule_.world_size();
  infos_.assign(n, nullptr);
  if (options_.share_class_programs) {
    std::unordered_map<int, std::shared_ptr<ProgramInfo>> by_rep;
    for (const RankClass& c : schedule_.rank_classes()) {
      by_rep[c.representative] = analyse(schedule_.program(c.representative));
      ++result_.programs_generated;
    }
    for (int r = 0; r < n; ++r) {
      auto it = by_rep.find(schedule_.representative_of(r));
      if (it == by_rep.end()) throw Error("schedule: rank " + std::to_string(r) + " has no class representative");
      infos_[r] = it->second;
    }
  } else {
    for (int r = 0; r < n; ++r) {
      infos_[r] = analyse(schedule_.program(r));
      ++result_.programs_generated;
    }
  }
  hbm_bytes_ = schedule_.scenario().cluster.hbm_bytes();
  node_host_bytes_.assign((n + platform_.gpus_per_node() - 1) / platform_.gpus_per_node(), 0);
  scan_exclusive_groups();
  fold_ = choose_fold();
  result_.fold = fold_;
  ranks_.resize(n / fold_);
  for (size_t u = 0; u < ranks_.size(); ++u) {
    RankState& s = ranks_[u];
    s.rank = int(u) * fold_;
    s.unit = int(u);
    s.info = infos_[s.rank].get();
    s.translate = s.info->program.rank != s.rank;
    const size_t tasks = s.info->program.tasks.size();
    s.done.assign((tasks + 63) / 64, 0);
    s.live.assign(s.info->program.buffers.size(), 0);
    s.remaining = tasks;
    s.device_bytes = options_.reserved_device_bytes;
    s.stats.peak_device_bytes = s.device_bytes;
    s.stats.model_flops = s.info->model_flops;
    s.stats.hardware_flops = s.info->hardware_flops;
  }
  const auto& groups = schedule_.groups();
  group_parties_.assign(groups.size(), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    int last = -1;
    for (int m : groups[g].ranks)  // members of a unit are consecutive in a group (checked by choose_fold)
      if (unit_of(m) != last) ++group_parties_[g], last = unit_of(m);
  }
}

void ReplayEngine::scan_exclusive_groups() {
  const auto& groups = schedule_.groups();
  const int n = schedule_.world_size();
  group_exclusive_.assign(groups.size(), 0);
  // Per program: the groups it runs collectives on (and whether on more than one stream), its peers.
  for (const auto& info : infos_) {
    if (usage_.count(info.get())) continue;
    Usage& u = usage_[info.get()];
    for (const Task& t : info->program.tasks) {
      if (const auto* c = std::get_if<Collective>(&t.op)) {
        auto [it, fresh] = u.group_stream.emplace(c->group, int(t.stream));
        if (!fresh && it->second != int(t.stream)) it->second = -1;
      } else if (const auto* s = std::get_if<SendRecv>(&t.op)) {
        u.peers.push_back(s->peer);
      }
    }
    std::sort(u.peers.begin(), u.peers.end());
    u.peers.erase(std::unique(u.peers.begin(), u.peers.end()), u.peers.end());
  }
  if (!options_.closed_form_uncontended) return;
  constexpr int64_t kNone = -1, kMany = -2, kP2p = int64_t(1) << 40;
  std::vector<int64_t> user(n, kNone);  // the one user of each GPU's NVLink links
  std::vector<uint8_t> multi_stream(groups.size(), 0);
  auto use = [&](int gpu, int64_t who) {
    if (user[gpu] == kNone) user[gpu] = who;
    else if (user[gpu] != who) user[gpu] = kMany;
  };
  for (int rank = 0; rank < n; ++rank) {
    const ProgramInfo* info = infos_[rank].get();
    const bool translate = info->program.rank != rank;
    const Usage& u = usage_[info];
    for (const auto& [g_rep, stream] : u.group_stream) {
      const GroupId g = translate ? schedule_.group_for(rank, g_rep) : g_rep;
      if (g >= groups.size()) continue;
      if (stream < 0) multi_stream[g] = 1;
      for (int m : groups[g].ranks)
        if (m != rank && platform_.same_node(m, rank)) {
          use(rank, g);
          break;
        }
    }
    for (int p_rep : u.peers) {
      const int p = translate ? schedule_.peer_for(rank, p_rep) : p_rep;
      if (p >= 0 && p < n && platform_.same_node(p, rank)) use(rank, kP2p), use(p, kP2p);
    }
  }
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& m = groups[g].ranks;
    bool ok = !m.empty() && !multi_stream[g];
    for (int r : m) ok = ok && r < n && platform_.same_node(r, m.front()) && user[r] == int64_t(g);
    group_exclusive_[g] = ok;
  }
}

// Tensor-parallel folding is taken only where every tp lane of a unit provably sees the same
// timeline: one class program for the whole unit, the unit's tp group closed-form, every other
// group the unit uses translated lane by lane (lane m's group = lane 0's group shifted by m
// ranks), every peer a unit's lane 0, and a platform the lanes look alike on (the unit inside one
// node; its GPUs' NICs a lane permutation cannot tell apart). Then the flows of lane m are lane
// 0's translated by m ranks through a symmetric fabric, and SimGrid's max-min sharing gives them
// the same rates; the replay also checks this as it runs (a phase whose lanes' flows do not end
// together sets SimResult::fold_exact = false and simulate() runs again unfolded).
int ReplayEngine::choose_fold() {
  if (!options_.fold_tensor_parallel || !options_.closed_form_uncontended || !options_.share_class_programs) return 1;
  const int n = schedule_.world_size();
  const RankGrid& grid = schedule_.grid();
  const int T = grid.tp();
  if (T <= 1 || grid.sp() != 1 || grid.size() != n || n % T) return 1;
  const int gpn = platform_.gpus_per_node(), nics = platform_.nics_per_node();
  if (gpn % T) return 1;
  if (nics < gpn) {
    if (gpn % nics) return 1;
    const int k = gpn / nics;  // GPUs per NIC
    if (T % k && k % T) return 1;
  }
  const auto& groups = schedule_.groups();
  std::vector<std::vector<GroupId>> lanes(groups.size());
  std::vector<uint8_t> internal(groups.size(), 0);
  for (int b = 0; b < n; b += T) {
    const ProgramInfo* info = infos_[b].get();
    for (int m = 1; m < T; ++m)
      if (infos_[b + m].get() != info || schedule_.representative_of(b + m) != schedule_.representative_of(b)) return 1;
    const GroupId tg = schedule_.group_of(b, GroupKind::kTp, 0);
    if (tg >= groups.size() || !group_exclusive_[tg] || int(groups[tg].ranks.size()) != T) return 1;
    for (int m = 0; m < T; ++m)
      if (groups[tg].ranks[m] != b + m) return 1;
    const bool translate = info->program.rank != b;
    const Usage& u = usage_[info];
    for (const auto& entry : u.group_stream) {
      const GroupId g_rep = entry.first;
      const GroupId g0 = translate ? schedule_.group_for(b, g_rep) : g_rep;
      if (g0 >= groups.size()) return 1;
      const auto& r0 = groups[g0].ranks;
      if (g0 == tg) {
        for (int m = 1; m < T; ++m)
          if (schedule_.group_for(b + m, g_rep) != tg) return 1;
        internal[g0] = 1;
        continue;
      }
      std::vector<GroupId> gl(T);
      for (int m = 0; m < T; ++m) {
        gl[m] = schedule_.group_for(b + m, g_rep);
        if (gl[m] >= groups.size() || groups[gl[m]].ranks.size() != r0.size() ||
            group_exclusive_[gl[m]] != group_exclusive_[g0])
          return 1;
        for (size_t i = 0; i < r0.size(); ++i)
          if (r0[i] % T || groups[gl[m]].ranks[i] != r0[i] + m) return 1;
      }
      if (!lanes[g0].empty() && lanes[g0] != gl) return 1;
      lanes[g0] = std::move(gl);
    }
    for (int p_rep : u.peers) {
      const int p = translate ? schedule_.peer_for(b, p_rep) : p_rep;
      if (p < 0 || p >= n || p % T) return 1;
      for (int m = 1; m < T; ++m)
        if (schedule_.peer_for(b + m, p_rep) != p + m) return 1;
    }
  }
  for (size_t g = 0; g < groups.size(); ++g)
    if (internal[g] && !lanes[g].empty()) return 1;
  lane_groups_ = std::move(lanes);
  return T;
}

void ReplayEngine::operator()() {
  try {
    prepare();
    run_loop();
  } catch (const Oom&) {
    result_.oom = true;
    for (auto& c : active_) c->cancel();
    active_.clear();
  } catch (const Error& e) {
    error_ = e.what();
    error_kind_ = e.kind();
    for (auto& c : active_) c->cancel();
    active_.clear();
    return;
  }
  result_.iteration_time_s = 0;
  result_.ranks.reserve(ranks_.size() * fold_);
  for (RankState& r : ranks_) {
    account(r, std::max(r.last_t, r.stats.end_s));
    result_.iteration_time_s = std::max(result_.iteration_time_s, r.stats.end_s);
    for (int m = 0; m < fold_; ++m) result_.ranks.push_back(r.stats);
  }
  if (result_.oom) result_.iteration_time_s = result_.oom_report.time_s;
}

SimResult ReplayEngine::take_result() { return std::move(result_); }

void ReplayEngine::add_timer(double t, uint8_t kind, uint32_t a, uint32_t b, uint32_t c) {
  timers_.push({t, timer_seq_++, kind, a, b, c});
}

void ReplayEngine::run_loop() {
  for (size_t r = 0; r < ranks_.size(); ++r) pump(int(r));
  while (true) {
    while (!timers_.empty() && timers_.top().t <= now_) {
      const Timer t = timers_.top();
      timers_.pop();
      ++result_.events;
      on_timer(t);
    }
    if (timers_.empty() && active_.empty()) break;
    if (active_.empty()) {  // nothing in SimGrid: jump
      now_ = timers_.top().t;
      offset_ = now_ - sg::Engine::get_clock();
      continue;
    }
    const double timeout = timers_.empty() ? -1.0 : timers_.top().t - now_;
    const ssize_t i = sg::Comm::wait_any_for(active_, timeout);
    if (i < 0) {
      now_ = timers_.top().t;
      offset_ = now_ - sg::Engine::get_clock();
    } else {
      now_ = std::max(now_, sg::Engine::get_clock() + offset_);
      ++result_.events;
      on_flow_done(size_t(i));
    }
  }
  for (const RankState& r : ranks_)
    if (r.remaining) deadlock();
}

void ReplayEngine::deadlock() const {
  std::ostringstream msg;
  msg << "schedule deadlocks: no task can run any more at t=" << now_ << " s;";
  int shown = 0;
  for (const RankState& r : ranks_) {
    if (!r.remaining || shown >= 8) continue;
    ++shown;
    msg << "\n  rank " << r.rank << ":";
    for (int s = 0; s < kStreamCount; ++s) {
      const auto& list = r.info->streams[s];
      if (r.cursor[s] >= list.size() && !(r.busy >> s & 1)) continue;
      const TaskId head = (r.busy >> s & 1) ? list[r.cursor[s] - 1] : list[r.cursor[s]];
      const Task& t = r.info->program.tasks[head];
      msg << " " << to_string(Stream(s)) << " at task " << head;
      if (r.busy >> s & 1) {
        if (const auto* c = std::get_if<Collective>(&t.op))
          msg << " (" << to_string(c->op) << " waiting for the rest of its group)";
        else if (const auto* sr = std::get_if<SendRecv>(&t.op))
          msg << " (" << (sr->is_send ? "send to " : "recv from ") << sr->peer << " unmatched)";
      } else {
        msg << " (waiting for deps)";
      }
      msg << ";";
    }
  }
  throw Error(msg.str());
}

bool ReplayEngine::deps_done(const RankState& r, const Task& t) const {
  for (TaskId d : t.deps)
    if (!test_bit(r.done, d)) return false;
  return true;
}

void ReplayEngine::account(RankState& r, double t) {
  const double dt = t - r.last_t;
  if (dt > 0) {
    if (r.computing) r.stats.compute_s += dt;
    else if (r.communicating) r.stats.exposed_comm_s += dt;
    else if (r.offloading) r.stats.offload_s += dt;
    else r.stats.idle_s += dt;
    r.last_t = t;
  }
}

void ReplayEngine::pump(int rank) {
  RankState& r = ranks_[rank];
  const ProgramInfo& info = *r.info;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < kStreamCount; ++s) {
      const auto& list = info.streams[s];
      while (!(r.busy >> s & 1) && r.cursor[s] < list.size()) {
        const Task& t = info.program.tasks[list[r.cursor[s]]];
        if (!deps_done(r, t)) break;
        ++r.cursor[s];
        start_task(r, t.id);
        progress = true;
      }
    }
  }
}

void ReplayEngine::finish_task(RankState& r, TaskId id, double start_s, double end_s) {
  set_bit(r.done, id);
  --r.remaining;
  r.stats.end_s = std::max(r.stats.end_s, end_s);
  if (options_.record_tasks)  // once per unit, under lane 0's rank (SimResult::tasks)
    result_.tasks.push_back({r.rank, id, r.info->program.tasks[id].stream, start_s, end_s});
}

void ReplayEngine::start_task(RankState& r, TaskId id) {
  const Task& t = r.info->program.tasks[id];
  const int s = static_cast<int>(t.stream);
  if (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op)) {
    memory_event(r, t, std::holds_alternative<Alloc>(t.op));
    finish_task(r, id, now_, now_);
    return;
  }
  r.busy |= 1u << s;
  r.busy_since[s] = now_;
  if (is_compute_like(t)) {
    double total = r.info->cost_s[id];
    uint32_t count = 1;
    if (options_.fuse_compute) {
      const auto& list = r.info->streams[s];
      TaskId cur = id;
      while (r.info->fuse_next[cur] && r.cursor[s] < list.size()) {
        cur = list[r.cursor[s]++];
        total += r.info->cost_s[cur];
        ++count;
      }
    }
    account(r, now_);
    if (t.stream == Stream::kCompute) ++r.computing;
    else ++r.offloading;
    add_timer(now_ + total, kComputeDone, uint32_t(r.unit), id, count);
    return;
  }
  if (const auto* c = std::get_if<Collective>(&t.op)) return issue_collective(r, id, *c);
  if (const auto* p = std::get_if<SendRecv>(&t.op)) return issue_p2p(r, id, *p);
  if (const auto* c = std::get_if<Copy>(&t.op)) return issue_copy(r, id, *c);
}

void ReplayEngine::on_timer(const Timer& t) {
  if (t.kind == kComputeDone) {
    RankState& r = ranks_[t.a];
    const Task& first = r.info->program.tasks[t.b];
    const int s = static_cast<int>(first.stream);
    account(r, now_);
    if (first.stream == Stream::kCompute) --r.computing;
    else --r.offloading;
    r.busy &= ~(1u << s);
    // The fused tasks are consecutive in the stream, ending just before the cursor.
    const auto& list = r.info->streams[s];
    double start = r.busy_since[s];
    for (uint32_t k = r.cursor[s] - t.c; k < r.cursor[s]; ++k) {
      const TaskId id = list[k];
      const double end = (k + 1 == r.cursor[s]) ? now_ : start + r.info->cost_s[id];
      finish_task(r, id, start, end);
      start = end;
    }
    pump(int(t.a));
    return;
  }
  NetOp& o = ops_[t.a];
  if (t.b == 1) return complete_op(t.a);  // closed form, or nothing to move
  if (++o.phase < o.plan->phases.size()) return start_phase(t.a);
  complete_op(t.a);
}

uint32_t ReplayEngine::new_op() {
  uint32_t id;
  if (!free_ops_.empty()) {
    id = free_ops_.back();
    free_ops_.pop_back();
    ops_[id] = NetOp{};
  } else {
    id = uint32_t(ops_.size());
    ops_.emplace_back();
  }
  ops_[id].in_use = true;
  return id;
}

void ReplayEngine::issue_collective(RankState& r, TaskId id, const Collective& c) {
  GroupId g = c.group;
  if (r.translate) {
    if (r.group_map.size() <= c.group) r.group_map.resize(c.group + 1, kNoId);
    if (r.group_map[c.group] == kNoId) r.group_map[c.group] = schedule_.group_for(r.rank, c.group);
    g = r.group_map[c.group];
  }
  if (g >= schedule_.groups().size())
    throw Error("schedule: " + rank_task(r.rank, id) + " names group " + std::to_string(c.group) + " that does not exist");
  uint32_t seq = 0;
  auto it = std::find_if(r.seq.begin(), r.seq.end(), [&](const auto& p) { return p.first == g; });
  if (it == r.seq.end()) r.seq.emplace_back(g, 1);
  else seq = it->second++;
  if (group_parties_[g] == 1) {  // the whole group is this state (a folded tp group): no matching
    const uint32_t op = new_op();
    NetOp& o = ops_[op];
    o.kind = NetOp::kCollective;
    o.group = g;
    o.collective = &c;
    o.expected = 1;
    o.bytes = c.bytes;
    o.parties.push_back({r.unit, id, now_});
    return launch(op);
  }
  const uint64_t key = (uint64_t(g) << 32) | seq;
  uint32_t op;
  auto pit = pending_collectives_.find(key);
  if (pit == pending_collectives_.end()) {
    op = new_op();
    NetOp& o = ops_[op];
    o.kind = NetOp::kCollective;
    o.group = g;
    o.collective = &c;
    o.expected = group_parties_[g];
    o.bytes = c.bytes;
    pending_collectives_.emplace(key, op);
  } else {
    op = pit->second;
    const Collective& first = *ops_[op].collective;
    if (first.op != c.op || first.bytes != c.bytes || first.root != c.root)
      throw Error("schedule: collective #" + std::to_string(seq) + " of group " + std::to_string(g) + " is " +
                  to_string(c.op) + " of " + std::to_string(c.bytes) + " bytes at " + rank_task(r.rank, id) +
                  " but " + to_string(first.op) + " of " + std::to_string(first.bytes) + " bytes at rank " +
                  std::to_string(ranks_[ops_[op].parties.front().unit].rank));
  }
  ops_[op].parties.push_back({r.unit, id, now_});
  if (ops_[op].parties.size() == ops_[op].expected) {
    pending_collectives_.erase(key);
    launch(op);
  }
}

void ReplayEngine::issue_p2p(RankState& r, TaskId id, const SendRecv& s) {
  const int peer = r.translate ? schedule_.peer_for(r.rank, s.peer) : s.peer;
  if (peer < 0 || peer >= schedule_.world_size() || peer == r.rank)
    throw Error("schedule: " + rank_task(r.rank, id) + " sends to or receives from invalid peer " + std::to_string(peer));
  const int src = s.is_send ? r.rank : peer, dst = s.is_send ? peer : r.rank;
  auto& q = pairs_[(uint64_t(src) << 32) | uint32_t(dst)];
  if (!q) q = std::make_unique<PairQueue>();
  auto& mine = s.is_send ? q->sends : q->recvs;
  auto& theirs = s.is_send ? q->recvs : q->sends;
  if (theirs.empty()) {
    const uint32_t op = new_op();
    NetOp& o = ops_[op];
    o.kind = NetOp::kP2P;
    o.src = src, o.dst = dst, o.bytes = s.bytes, o.tag = s.tag;
    o.expected = 2;
    o.parties.push_back({r.unit, id, now_});
    mine.push_back(op);
    return;
  }
  const uint32_t op = theirs.front();
  theirs.pop_front();
  NetOp& o = ops_[op];
  if (o.bytes != s.bytes || o.tag != s.tag)
    throw Error("schedule: " + rank_task(r.rank, id) + " (" + std::to_string(s.bytes) + " bytes, tag " +
                std::to_string(s.tag) + ") matches a post of " + std::to_string(o.bytes) + " bytes, tag " +
                std::to_string(o.tag) + " at rank " + std::to_string(ranks_[o.parties.front().unit].rank) + " task " +
                std::to_string(o.parties.front().task) + " between ranks " + std::to_string(src) + " -> " +
                std::to_string(dst));
  o.parties.push_back({r.unit, id, now_});
  launch(op);
}

void ReplayEngine::issue_copy(RankState& r, TaskId id, const Copy& c) {
  const uint32_t op = new_op();
  NetOp& o = ops_[op];
  o.kind = NetOp::kCopy;
  o.src = r.rank;
  o.bytes = c.bytes;
  o.direction = c.direction;
  o.expected = 1;
  o.parties.push_back({r.unit, id, now_});
  launch(op);
}

void ReplayEngine::launch(uint32_t op) {
  NetOp& o = ops_[op];
  for (const Party& p : o.parties) {
    RankState& r = ranks_[p.unit];
    account(r, now_);
    if (o.kind == NetOp::kCopy) ++r.offloading;
    else ++r.communicating;
  }
  o.phase = 0;
  // Folded: everything but the unit's own tp group moves the data of every lane.
  o.lanes = fold_ > 1 && (o.kind != NetOp::kCollective || !lane_groups_[o.group].empty()) ? uint32_t(fold_) : 1;
  if (o.kind == NetOp::kCollective) {
    result_.collectives += o.lanes;
    const Collective& c = *o.collective;
    const auto& members = schedule_.group(o.group).ranks;
    if (members.size() <= 1 || c.bytes <= 0) return add_timer(now_, kNetOpPhaseDone, op, 1);
    if (options_.calibration) {
      const double measured = options_.calibration->find_collective(
          c.op, schedule_.group(o.group).kind, int(members.size()), c.bytes);
      if (measured >= 0) {
        ++result_.calibrated_collectives;
        return add_timer(now_ + measured, kNetOpPhaseDone, op, 1);
      }
    }
    // Tuning, plans and the closed-form time depend only on (group, op, bytes, root): computed once.
    auto& entry = collective_cache_[CollectiveKey{o.group, uint8_t(c.op), c.root, c.bytes}];
    if (!entry.plan) {
      const TunedCollective tune = tuner_.choose(c.op, members, double(c.bytes));
      entry.cost = tune.cost;
      auto plan = std::make_shared<CollectivePlan>(plan_collective(c.op, members, std::max(0, c.root), double(c.bytes),
                                                                   tune.algorithm, options_.granularity, fabric_));
      if (group_exclusive_[o.group]) entry.closed_form_s = uncontended_time(*plan, fabric_, entry.cost);
      if (o.lanes > 1 && !group_exclusive_[o.group]) {
        auto m = std::make_shared<CollectivePlan>(*plan);
        for (uint32_t lane = 1; lane < o.lanes; ++lane) {
          const CollectivePlan p = plan_collective(c.op, schedule_.group(lane_groups_[o.group][lane]).ranks,
                                                   std::max(0, c.root), double(c.bytes), tune.algorithm,
                                                   options_.granularity, fabric_);
          if (p.phases.size() != m->phases.size()) throw Error("sim: internal: tensor-parallel lanes plan differently", ErrorKind::kInternal);
          for (size_t i = 0; i < p.phases.size(); ++i)
            m->phases[i].flows.insert(m->phases[i].flows.end(), p.phases[i].flows.begin(), p.phases[i].flows.end());
        }
        plan = std::move(m);
      }
      entry.plan = std::move(plan);
    }
    o.cost = entry.cost;
    if (group_exclusive_[o.group]) {  // every lane's group is exclusive too (choose_fold)
      result_.closed_form_collectives += o.lanes;
      return add_timer(now_ + entry.closed_form_s, kNetOpPhaseDone, op, 1);
    }
    o.plan = entry.plan;
  } else if (o.kind == NetOp::kP2P) {
    if (o.bytes <= 0) return add_timer(now_, kNetOpPhaseDone, op, 1);
    const TunedCollective tune = tuner_.choose_p2p(o.src, o.dst, double(o.bytes));
    o.cost = tune.cost;
    auto plan = std::make_shared<CollectivePlan>(plan_p2p(o.src, o.dst, double(o.bytes)));
    for (uint32_t lane = 1; lane < o.lanes; ++lane) {
      const CollectivePlan p = plan_p2p(o.src + int(lane), o.dst + int(lane), double(o.bytes));
      for (size_t i = 0; i < p.phases.size(); ++i)
        plan->phases[i].flows.insert(plan->phases[i].flows.end(), p.phases[i].flows.begin(), p.phases[i].flows.end());
    }
    o.plan = std::move(plan);
  } else {
    if (o.bytes <= 0 || o.direction == CopyDirection::kD2D) return add_timer(now_, kNetOpPhaseDone, op, 1);
    auto plan = std::make_shared<CollectivePlan>();
    plan->phases.emplace_back();
    o.plan = plan;
  }
  start_phase(op);
}

void ReplayEngine::start_phase(uint32_t op) {
  NetOp& o = ops_[op];
  if (o.kind == NetOp::kCopy) {
    const bool h2d = o.direction == CopyDirection::kH2D;
    o.shadows.clear();
    for (uint32_t lane = 0; lane < o.lanes; ++lane) {
      sg::Host* gpu = platform_.pcie(o.src + int(lane));
      sg::Host* cpu = platform_.cpu_of(o.src + int(lane));
      sg::CommPtr c = sg::Comm::sendto_async(h2d ? cpu : gpu, h2d ? gpu : cpu, uint64_t(o.bytes));
      if (lane) {
        o.shadows.push_back(std::move(c));
        continue;
      }
      active_.push_back(std::move(c));
      active_op_.push_back(op);
      active_slot_.push_back(0);
    }
    o.outstanding = o.lanes;
    o.lane_flows = 1;
    result_.flows += o.lanes;
    return;
  }
  const CommPhase& p = o.plan->phases[o.phase];
  if (p.flows.empty()) return phase_flows_done(op);
  o.lane_flows = uint32_t(p.flows.size() / o.lanes);
  o.shadows.clear();
  uint32_t slot = 0;
  for (const Flow& f : p.flows) {
    sg::Host *a, *b;
    if (platform_.same_node(f.src, f.dst)) a = platform_.nvl(f.src), b = platform_.nvl(f.dst);
    else a = platform_.nic_of(f.src), b = platform_.nic_of(f.dst);
    const double bytes = f.bytes / o.cost.efficiency;
    sg::CommPtr c = sg::Comm::sendto_async(a, b, uint64_t(std::max(1.0, std::llround(bytes) * 1.0)));
    if (slot++ >= o.lane_flows) {
      o.shadows.push_back(std::move(c));
      continue;
    }
    active_.push_back(std::move(c));
    active_op_.push_back(op);
    active_slot_.push_back(slot - 1);
  }
  o.outstanding = uint32_t(p.flows.size());
  result_.flows += p.flows.size();
}

void ReplayEngine::phase_flows_done(uint32_t op) {
  NetOp& o = ops_[op];
  double latency = 0;
  if (o.kind == NetOp::kCopy) {
    latency = schedule_.scenario().cluster.pcie_latency_us * 1e-6;
    return add_timer(now_ + latency, kNetOpPhaseDone, op, 1);
  }
  const CommPhase& p = o.plan->phases[o.phase];
  latency = p.nvlink_hops * (fabric_.nvlink_latency_s + o.cost.nvlink_hop_s) +
            p.network_hops * (fabric_.nic_latency_s + o.cost.network_hop_s);
  if (o.kind == NetOp::kP2P && p.nvlink_hops + p.network_hops == 0) {
    const bool local = platform_.same_node(o.src, o.dst);
    latency = local ? fabric_.nvlink_latency_s + o.cost.nvlink_hop_s : fabric_.nic_latency_s + o.cost.network_hop_s;
  }
  if (o.phase == 0) latency += o.cost.base_s + pipeline_fill_s(*o.plan, fabric_, o.cost);
  add_timer(now_ + latency, kNetOpPhaseDone, op, 0);
}

void ReplayEngine::on_flow_done(size_t index) {
  const uint32_t op = active_op_[index];
  const uint32_t slot = active_slot_[index];
  active_[index] = std::move(active_.back());
  active_.pop_back();
  active_op_[index] = active_op_.back();
  active_op_.pop_back();
  active_slot_[index] = active_slot_.back();
  active_slot_.pop_back();
  NetOp& o = ops_[op];
  if (o.lanes > 1 && !(slot & kLateFlow)) {
    // Lane 0's flow ended: every other lane's flow in this slot must have ended at the same time
    // (choose_fold). One that is still running is waited for, one that ended earlier is only
    // noted: either way the run is not exact and simulate() runs it again unfolded.
    const double t = sg::Engine::get_clock();
    for (uint32_t lane = 1; lane < o.lanes; ++lane) {
      sg::CommPtr& c = o.shadows[(lane - 1) * o.lane_flows + slot];
      if (c->test()) {
        if (c->get_finish_time() != t) result_.fold_exact = false;
        --o.outstanding;
      } else {
        result_.fold_exact = false;
        active_.push_back(std::move(c));
        active_op_.push_back(op);
        active_slot_.push_back(slot | kLateFlow);
      }
      c = nullptr;
    }
  }
  if (--o.outstanding == 0) phase_flows_done(op);
}

void ReplayEngine::complete_op(uint32_t op) {
  std::vector<Party> parties = std::move(ops_[op].parties);
  const bool copy = ops_[op].kind == NetOp::kCopy;
  ops_[op].in_use = false;
  ops_[op].plan.reset();
  free_ops_.push_back(op);
  for (const Party& p : parties) {
    RankState& r = ranks_[p.unit];
    account(r, now_);
    if (copy) --r.offloading;
    else --r.communicating;
    r.busy &= ~(1u << static_cast<int>(r.info->program.tasks[p.task].stream));
    finish_task(r, p.task, p.issued_s, now_);
  }
  for (const Party& p : parties) pump(p.unit);
}

void ReplayEngine::memory_event(RankState& r, const Task& t, bool alloc) {
  const uint32_t idx = r.info->task_buffer[t.id];
  const int64_t fast = r.info->device_bytes[idx];  // > 0: a device buffer (compact copy of Buffer)
  if (fast > 0 && alloc != bool(r.live[idx]) && (!alloc || hbm_bytes_ <= 0 || r.device_bytes + fast <= hbm_bytes_)) {
    r.live[idx] = alloc;
    r.device_bytes += alloc ? fast : -fast;
    r.stats.peak_device_bytes = std::max(r.stats.peak_device_bytes, r.device_bytes);
    if (options_.record_memory) result_.memory.push_back({r.rank, now_, r.device_bytes, r.host_bytes});
    return;
  }
  const BufferId id = alloc ? std::get<Alloc>(t.op).buffer : std::get<Free>(t.op).buffer;
  const Buffer& b = r.info->program.buffers[idx];
  if (b.is_view() || b.placement == Placement::kNvme) return;
  if (alloc == bool(r.live[idx]))
    throw Error("schedule: " + rank_task(r.rank, t.id) + (alloc ? " allocates buffer '" : " frees buffer '") + b.name +
                "' (" + std::to_string(id) + ")" + (alloc ? " that is already live" : " that is not live"));
  r.live[idx] = alloc;
  const ClusterSpec& cl = schedule_.scenario().cluster;
  const int node = platform_.node_of(r.rank);
  const int64_t delta = alloc ? b.bytes : -b.bytes;
  if (b.placement == Placement::kDevice) {
    if (alloc && r.device_bytes + b.bytes > cl.hbm_bytes() && cl.hbm_bytes() > 0) {
      r.live[idx] = 0;
      OomReport& o = result_.oom_report;
      o.rank = r.rank, o.time_s = now_, o.host = false, o.buffer = b.name;
      o.requested_bytes = b.bytes, o.in_use_bytes = r.device_bytes, o.capacity_bytes = cl.hbm_bytes();
      for (size_t i = 0; i < r.live.size(); ++i) {
        const Buffer& lb = r.info->program.buffers[i];
        if (r.live[i] && lb.placement == Placement::kDevice) o.live.push_back({lb.name, lb.role, lb.bytes});
      }
      std::stable_sort(o.live.begin(), o.live.end(), [](const LiveBuffer& a, const LiveBuffer& b) { return a.bytes > b.bytes; });
      throw Oom{};
    }
    r.device_bytes += delta;
    r.stats.peak_device_bytes = std::max(r.stats.peak_device_bytes, r.device_bytes);
  } else {
    const int64_t cap = static_cast<int64_t>(cl.host_memory_gib * 1073741824.0);
    if (alloc && cap > 0 && node_host_bytes_[node] + fold_ * b.bytes > cap) {
      r.live[idx] = 0;
      OomReport& o = result_.oom_report;
      o.rank = r.rank, o.time_s = now_, o.host = true, o.buffer = b.name;
      o.requested_bytes = b.bytes, o.in_use_bytes = node_host_bytes_[node], o.capacity_bytes = cap;
      for (size_t i = 0; i < r.live.size(); ++i) {
        const Buffer& lb = r.info->program.buffers[i];
        if (r.live[i] && lb.placement == Placement::kHost) o.live.push_back({lb.name, lb.role, lb.bytes});
      }
      std::stable_sort(o.live.begin(), o.live.end(), [](const LiveBuffer& a, const LiveBuffer& b) { return a.bytes > b.bytes; });
      throw Oom{};
    }
    node_host_bytes_[node] += fold_ * delta;
    r.host_bytes += delta;
    r.stats.peak_host_bytes = std::max(r.stats.peak_host_bytes, r.host_bytes);
  }
  if (options_.record_memory) result_.memory.push_back({r.rank, now_, r.device_bytes, r.host_bytes});
}

}  // namespace tandem::sim
