#include "sim/replay_engine.h"

#include <algorithm>
#include <unordered_map>

#include "shared/error.h"
#include "sim/deadlock_report.h"

namespace tandem::sim {
namespace sg = simgrid::s4u;

ReplayEngine::ReplayEngine(const Schedule& schedule, const SimOptions& options, const Platform& platform,
                           const FabricModel& fabric, const ComputeCostModel& costs, NcclTuner& tuner)
    : schedule_(schedule), options_(options), platform_(platform), fabric_(fabric), costs_(costs), tuner_(tuner) {}

ReplayEngine::~ReplayEngine() {
  // Under SimOptions::isolate the replay runs in a forked child that leaves with _exit once its
  // result is written (sim/forked_call.cc): freeing the class programs (millions of tasks and
  // their buffers) first would only cost time, so they are left to the exit.
  if (options_.isolate) new std::vector<std::shared_ptr<ProgramInfo>>(std::move(infos_));
}

void ReplayEngine::prepare() {
  const int n = schedule_.world_size();
  infos_.assign(n, nullptr);
  if (options_.share_class_programs) {
    std::unordered_map<int, std::shared_ptr<ProgramInfo>> by_rep;
    for (const RankClass& c : schedule_.rank_classes()) {
      by_rep[c.representative] = analyse_program(schedule_.program(c.representative), costs_);
      ++result_.programs_generated;
    }
    for (int r = 0; r < n; ++r) {
      auto it = by_rep.find(schedule_.representative_of(r));
      if (it == by_rep.end()) throw Error("schedule: rank " + std::to_string(r) + " has no class representative");
      infos_[r] = it->second;
    }
  } else {
    for (int r = 0; r < n; ++r) {
      infos_[r] = analyse_program(schedule_.program(r), costs_);
      ++result_.programs_generated;
    }
  }
  layout_.emplace(schedule_, options_, platform_, infos_, &tuner_, &fabric_);
  fold_ = layout_->fold();
  result_.fold = fold_;
  memory_.emplace(schedule_, options_, platform_, result_);
  ranks_.resize(layout_->units());
  if (layout_->scattered()) {
    result_.lane0.resize(n);
    for (int r = 0; r < n; ++r) result_.lane0[r] = layout_->lane0(layout_->unit_of(r));
  }
  for (size_t u = 0; u < ranks_.size(); ++u) {
    RankState& s = ranks_[u];
    s.rank = layout_->lane0(int(u));
    s.unit = int(u);
    s.info = infos_[s.rank].get();
    s.translate = s.info->program.rank != s.rank;
    const size_t tasks = s.info->program.tasks.size();
    s.done.assign((tasks + 63) / 64, 0);
    s.remaining = tasks;
    tasks_total_ += tasks;
    memory_->add_unit(*s.info, s.stats, layout_->unit_nodes(int(u)));
    s.stats.model_flops = s.info->model_flops;
    s.stats.hardware_flops = s.info->hardware_flops;
    s.stats.component_s = s.info->compute_component_s;
  }
  tasks_left_ = tasks_total_;
  matcher_.emplace(schedule_, *layout_, ops_);
  flows_.emplace(schedule_, options_, platform_, fabric_, tuner_, *layout_, ops_, timers_, result_);
  if (options_.calibration && schedule_.scenario().cluster.preset == "host") {  // sim/host_collective_progress.h
    polled_.emplace(timers_, ops_, [this](int unit) { return ranks_[unit].computing > 0; });
    flows_->set_polled(&*polled_);
    gaps_.emplace(ranks_.size());
    if (options_.calibration->rank_speed_spread() > 0)  // sim/rank_speed_lag.h
      lag_.emplace(options_.calibration->rank_speed_spread(), options_.calibration->collective_wait_s());
  }
  // A host profile's kernel times are of a core each; ranks of the predicted run beyond the
  // calibration machine's cores share them, whatever the scenario's cluster (`tandem run` runs
  // every rank on the machine it runs on).
  const CalibrationTable* cal = options_.calibration.get();
  if (cal && cal->host_profile() && cal->shares_cores(schedule_.world_size())) {  // sim/host_core_share.h
    std::vector<double> threads(ranks_.size());
    for (size_t u = 0; u < ranks_.size(); ++u) threads[u] = double(layout_->lanes(int(u))) * cal->blas_threads_per_rank();
    cores_.emplace(timers_, cal->cores(), std::move(threads));
  }
}

void ReplayEngine::cancel_flows() {
  if (flows_) flows_->cancel_all();
}

void ReplayEngine::operator()() {
  try {
    prepare();
    run_loop();
  } catch (const MemoryLedger::OutOfMemory&) {
    result_.oom = true;
    cancel_flows();
  } catch (const Error& e) {
    error_ = e.what();
    error_kind_ = e.kind();
    cancel_flows();
    progress_.finish();
    return;
  }
  progress_.finish();
  result_.iteration_time_s = 0;
  result_.ranks.resize(size_t(schedule_.world_size()));
  for (RankState& r : ranks_) {
    r.account(std::max(r.last_t, r.stats.end_s));
    result_.iteration_time_s = std::max(result_.iteration_time_s, r.stats.end_s);
    for (int m = 0; m < layout_->lanes(r.unit); ++m) result_.ranks[layout_->member(r.unit, m)] = r.stats;
  }
  if (result_.oom) result_.iteration_time_s = result_.oom_report.time_s;
}

SimResult ReplayEngine::take_result() { return std::move(result_); }

void ReplayEngine::count_event() {
  // The progress line reads the wall clock only every 4096 events.
  if ((++result_.events & 4095) == 0 && progress_.on()) progress_.tick(now_, tasks_total_ - tasks_left_, tasks_total_);
}

void ReplayEngine::run_loop() {
  for (size_t r = 0; r < ranks_.size(); ++r) pump(int(r));
  std::vector<sg::CommPtr>& active = flows_->flows();
  // A folded run in a forked child whose lanes part is run again by simulate() (less folded), so
  // it stops there: the rest of it would be thrown away.
  // The approximate tier keeps it (SimOptions::approximate), unless a flow broke the fold itself.
  const bool stop_when_parted = options_.isolate && fold_ > 1;
  const bool keep_parted = options_.approximate;
  while (true) {
    if (stop_when_parted && !result_.fold_exact && (!keep_parted || result_.fold_broken)) {
      flows_->cancel_all();
      return;
    }
    while (!timers_.empty() && timers_.top().t <= now_) {
      const Timer t = timers_.top();
      timers_.pop();
      count_event();
      on_timer(t);
    }
    if (timers_.empty() && active.empty()) break;
    if (active.empty()) {  // nothing in SimGrid: jump
      now_ = timers_.top().t;
      offset_ = now_ - sg::Engine::get_clock();
      continue;
    }
    // Flows that ended at the clock SimGrid has reached are handed out lowest index first, as
    // Comm::wait_any_for would return them one call after another; only when none is left does the
    // replay wait on SimGrid. (wait_any_for tests every activity it is given and, in SimGrid 3.32,
    // each test of an ended flow walks the list of all flows in flight: handing k flows that end
    // together to it one by one costs k^2 times the flows in flight, the n^3 of pure data
    // parallelism; docs/sim.md.)
    ssize_t i = flows_->ended_flow();
    if (i < 0) {
      const double timeout = timers_.empty() ? -1.0 : timers_.top().t - now_;
      i = sg::Comm::wait_any_for(active, timeout);
      flows_->note_ended_flows();
    }
    if (i < 0) {
      now_ = timers_.top().t;
      offset_ = now_ - sg::Engine::get_clock();
    } else {
      now_ = std::max(now_, sg::Engine::get_clock() + offset_);
      count_event();
      flows_->flow_done(size_t(i), now_);
    }
  }
  for (const RankState& r : ranks_)
    if (r.remaining) throw Error(deadlock_report(now_, ranks_));
}

bool ReplayEngine::deps_done(const RankState& r, const Task& t) const {
  for (TaskId d : t.deps)
    if (!r.is_done(d)) return false;
  return true;
}

void ReplayEngine::pump(int unit) {
  RankState& r = ranks_[unit];
  const ProgramInfo& info = *r.info;
  bool progress = true;
  while (progress) {
    progress = false;
    for (int s = 0; s < kStreamCount; ++s) {
      const auto& list = info.streams[s];
      while (!r.stream_busy(s) && r.cursor[s] < list.size()) {
        const Task& t = info.program.tasks[list[r.cursor[s]]];
        if (!deps_done(r, t)) break;
        ++r.cursor[s];
        start_task(r, t.id);
        progress = true;
      }
    }
  }
}

void ReplayEngine::finish_task(RankState& r, TaskId id, double start_s, double end_s, bool record) {
  r.mark_done(id);
  --r.remaining;
  --tasks_left_;
  r.stats.end_s = std::max(r.stats.end_s, end_s);
  if (options_.record_tasks && record)  // once per unit, under lane 0's rank (SimResult::tasks)
    result_.tasks.push_back({r.rank, id, r.info->program.tasks[id].stream, start_s, end_s});
}

void ReplayEngine::start_task(RankState& r, TaskId id) {
  const Task& t = r.info->program.tasks[id];
  const int s = static_cast<int>(t.stream);
  if (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op)) {
    memory_->apply(r.unit, r.rank, *r.info, t, std::holds_alternative<Alloc>(t.op), now_, r.stats);
    // A host Alloc/Free with a time is recorded with the kernel that runs it (ProgramInfo::memory_ops_of).
    finish_task(r, id, now_, now_, r.info->memory_charged.empty() || !r.info->memory_charged[id]);
    return;
  }
  r.busy |= 1u << s;
  r.busy_since[s] = now_;
  if (!r.info->host_flows.empty() && t.stream == Stream::kHost)
    if (auto f = r.info->host_flows.find(id); f != r.info->host_flows.end())  // sim/program_info.h
      return launch(matcher_->post_host_memory(r, id, f->second.bytes, f->second.compute_s,
                                               uint8_t(r.info->component[id]), now_));
  if (is_compute_like(t)) {
    // A compute-stream kernel starts when the stream, its deps and the host allow: the host issues
    // kernels one after another, dispatch_s each (0 with CUDA graphs), never waiting for the GPU.
    const bool issued = t.stream == Stream::kCompute;
    if (issued) r.host_at_group = r.host_s;
    auto run = [&](double ready, TaskId k) {
      if (!issued) return ready + r.info->cost_s[k];
      r.host_s += r.info->dispatch_s[k];
      return std::max(ready, r.host_s) + r.info->cost_s[k];
    };
    double end = run(now_, id);
    uint32_t count = 1;
    // On shared cores a run's tasks are not fused: each one's time depends on who computes beside it.
    const bool shared = cores_ && t.stream == Stream::kCompute;
    if (options_.fuse_compute && !shared) {
      const auto& list = r.info->streams[s];
      TaskId cur = id;
      while (r.info->fuse_next[cur] && r.cursor[s] < list.size()) {
        cur = list[r.cursor[s]++];
        end = run(end, cur);
        ++count;
      }
    }
    const double total = end - now_;
    r.account(now_);
    if (t.stream == Stream::kCompute) {
      if (++r.computing == 1 && polled_) polled_->compute_started(r.unit, now_);
    } else {
      ++r.offloading;
      ++r.active[static_cast<int>(r.info->component[id])];
    }
    if (shared) cores_->start(r.unit, total, id, count, now_);
    else timers_.compute_done(now_ + total, uint32_t(r.unit), id, count);
    return;
  }
  if (const auto* c = std::get_if<Collective>(&t.op)) return launch(matcher_->post_collective(r, id, *c, now_));
  if (const auto* p = std::get_if<SendRecv>(&t.op)) return launch(matcher_->post_p2p(r, id, *p, now_));
  if (const auto* c = std::get_if<Copy>(&t.op)) return launch(matcher_->post_copy(r, id, *c, now_));
}

void ReplayEngine::launch(uint32_t op) {
  if (op == NetOpMatcher::kWaiting) return;
  NetOp& o = ops_[op];
  o.component = static_cast<uint8_t>(component_of(o));
  for (const Party& p : o.parties) {
    RankState& r = ranks_[p.unit];
    r.account(now_);
    if (o.kind == NetOp::kCopy || o.kind == NetOp::kHostMemory) ++r.offloading;
    else ++r.communicating;
    ++r.active[o.component];
  }
  if (gaps_ && o.kind == NetOp::kCollective) {
    o.gap_s = gaps_->gap_s(o.parties);
    if (lag_ && schedule_.group(o.group).ranks.size() >= 2)
      if (const double wait = lag_->delay_s(o.parties, now_, *gaps_); wait > 0) return timers_.launch_op(now_ + wait, op);
  }
  flows_->launch(op, now_);
}

Component ReplayEngine::component_of(const NetOp& o) {
  if (o.kind == NetOp::kCopy) return Component::kPcie;
  if (o.kind == NetOp::kHostMemory) return static_cast<Component>(o.component);  // the host task's
  if (o.kind == NetOp::kP2P) return Component::kP2P;
  if (group_crosses_nodes_.size() <= o.group) group_crosses_nodes_.resize(schedule_.groups().size(), -1);
  int8_t& crosses = group_crosses_nodes_[o.group];
  if (crosses < 0) {
    const std::vector<int>& members = schedule_.group(o.group).ranks;
    crosses = 0;
    for (int m : members) crosses |= platform_.node_of(m) != platform_.node_of(members.front());
  }
  return crosses ? Component::kNic : Component::kNvlink;
}

void ReplayEngine::on_timer(const Timer& t) {
  if (t.kind == Timer::kComputeDone) return compute_done(t);
  if (t.kind == Timer::kSharedComputeDone) {
    if (const std::optional<Timer> run = cores_->done(t.first_task, now_)) compute_done(*run);
    return;
  }
  if (t.kind == Timer::kLaunchOp) return flows_->launch(t.target, now_);
  if (t.kind == Timer::kNetFlowsDone) return flows_->alone_flows_done(t.target, t.first_task, now_);
  if (t.kind == Timer::kPolledOpDone) return polled_->done(t.target, t.first_task) ? complete_op(t.target) : void();
  if (t.kind == Timer::kNetOpDone || flows_->next_phase(t.target, now_)) complete_op(t.target);
}

void ReplayEngine::compute_done(const Timer& t) {
  RankState& r = ranks_[t.target];
  const Task& first = r.info->program.tasks[t.first_task];
  const int s = static_cast<int>(first.stream);
  r.account(now_);
  if (first.stream == Stream::kCompute) {
    if (--r.computing == 0 && polled_) polled_->compute_stopped(int(t.target), now_);
  } else {
    --r.offloading;
    --r.active[static_cast<int>(r.info->component[t.first_task])];
  }
  r.busy &= ~(1u << s);
  // The fused tasks are consecutive in the stream, ending just before the cursor.
  const auto& list = r.info->streams[s];
  double ready = r.busy_since[s], host = r.host_at_group;
  for (uint32_t k = r.cursor[s] - t.task_count; k < r.cursor[s]; ++k) {
    const TaskId id = list[k];
    double start = ready;
    if (first.stream == Stream::kCompute) start = std::max(ready, host += r.info->dispatch_s[id]);
    const double end = (k + 1 == r.cursor[s]) ? now_ : start + r.info->cost_s[id];
    // A run on shared cores took longer than its cost: the rank waited for a core (a rank off its
    // core makes no progress; when it runs, its kernel runs whole, as the measured traces show:
    // docs/exec.md "Session 19"). The wait is recorded as time before its tasks, which keep their costs.
    if (cores_ && first.stream == Stream::kCompute) start = std::max(start, end - r.info->cost_s[id]);
    if (r.info->memory_ops_of.empty() && r.info->gap_s.empty()) {
      finish_task(r, id, start, end);
    } else {
      for (const TimedTask& x : split_memory_time(*r.info, id, start, end))
        if (x.task == id) finish_task(r, id, x.start_s, x.end_s);
        else if (options_.record_tasks) result_.tasks.push_back({r.rank, x.task, r.info->program.tasks[x.task].stream, x.start_s, x.end_s});
      r.stats.end_s = std::max(r.stats.end_s, end);
    }
    ready = end;
  }
  pump(int(t.target));
}

void ReplayEngine::complete_op(uint32_t op) {
  std::vector<Party> parties = std::move(ops_[op].parties);
  const bool copy = ops_[op].kind == NetOp::kCopy || ops_[op].kind == NetOp::kHostMemory;
  if (gaps_ && ops_[op].kind == NetOp::kCollective && schedule_.group(ops_[op].group).ranks.size() >= 2)
    gaps_->ended(parties, now_);
  const uint8_t component = ops_[op].component;
  ops_.release(op);
  for (const Party& p : parties) {
    RankState& r = ranks_[p.unit];
    r.account(now_);
    if (copy) --r.offloading;
    else --r.communicating;
    --r.active[component];
    r.busy &= ~(1u << static_cast<int>(r.info->program.tasks[p.task].stream));
    finish_task(r, p.task, p.issued_s, now_);
  }
  for (const Party& p : parties) pump(p.unit);
}

}  // namespace tandem::sim
