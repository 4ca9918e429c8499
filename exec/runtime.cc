#include "exec/runtime.h"

#include <sched.h>

#include <chrono>

#include "exec/param_init.h"
#include "shared/error.h"

namespace tandem::exec {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

const char* kind_of(const Task& t) {
  if (const Compute* c = std::get_if<Compute>(&t.op)) return to_string(c->kernel);
  if (const Collective* c = std::get_if<Collective>(&t.op)) return to_string(c->op);
  if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) return m->is_send ? "send" : "recv";
  if (std::holds_alternative<Copy>(t.op)) return "copy";
  if (std::holds_alternative<Alloc>(t.op)) return "alloc";
  return "free";
}

// Pipeline messages stay out of the memory order (shared/schedule.h is_pipeline): a receive buffer
// must be posted before its message arrives, and a sent buffer is freed when the peer has received
// it; making either wait for the local memory order can close a cycle between two stages (1F1B).

}  // namespace

Runtime::Runtime(const Schedule& schedule, int rank, Driver& driver, const ExecOptions& options)
    : schedule_(schedule),
      rank_(rank),
      driver_(driver),
      options_(options),
      program_(schedule.program(rank)),
      chain_(schedule.scenario().model.vocab, schedule.scenario().seed) {
  const size_t nb = program_.buffers.size();
  root_.resize(nb);
  root_offset_.assign(nb, 0);
  for (const Buffer& b : program_.buffers) {
    BufferId r = b.id;
    int64_t off = 0;
    while (program_.buffers.at(r).is_view()) {
      off += program_.buffers[r].view_offset_bytes;
      r = program_.buffers[r].view_of;
    }
    root_[b.id] = r;
    root_offset_[b.id] = off;
    if (b.name == "loss" && !b.is_view()) loss_ = b.id;
  }
  memory_.assign(nb, nullptr);
  // A root allocated and never freed in the program is persistent state.
  std::vector<int> allocs(nb, 0), frees(nb, 0);
  for (const Task& t : program_.tasks) {
    if (const Alloc* a = std::get_if<Alloc>(&t.op)) ++allocs.at(a->buffer);
    if (const Free* f = std::get_if<Free>(&t.op)) ++frees.at(f->buffer);
  }
  persistent_.assign(nb, false);
  for (BufferId b = 0; b < nb; ++b) persistent_[b] = allocs[b] > 0 && frees[b] == 0;
  streams_.assign(kStreamCount, {});
  for (const Task& t : program_.tasks) {
    if (t.id >= program_.tasks.size() || &program_.tasks[t.id] != &t)
      throw Error("exec: rank " + std::to_string(rank) + ": task ids are not program indices");
    streams_[static_cast<int>(t.stream)].push_back(t.id);
    if ((std::holds_alternative<Free>(t.op) || std::holds_alternative<Alloc>(t.op)) && !is_pipeline(t.stream))
      memory_ops_.push_back(t.id);
  }
  initialise();
}

Runtime::~Runtime() {
  for (BufferId b = 0; b < memory_.size(); ++b)
    if (memory_[b]) driver_.release(memory_[b], program_.buffers[b].bytes, program_.buffers[b].placement);
}

void* Runtime::address(BufferId id) const {
  void* base = memory_.at(root_.at(id));
  if (!base)
    throw Error("exec: rank " + std::to_string(rank_) + ": buffer " + program_.buffers[id].name +
                    " is used while not allocated",
                ErrorKind::kInternal);
  return static_cast<char*>(base) + root_offset_[id];
}

std::vector<void*> Runtime::addresses(const std::vector<BufferId>& ids) const {
  std::vector<void*> out;
  out.reserve(ids.size());
  for (BufferId id : ids) out.push_back(address(id));
  return out;
}

void Runtime::allocate(BufferId root) {
  const Buffer& b = program_.buffers.at(root);
  if (b.is_view()) throw Error("exec: rank " + std::to_string(rank_) + ": Alloc of view " + b.name, ErrorKind::kInternal);
  if (memory_[root]) throw Error("exec: rank " + std::to_string(rank_) + ": buffer " + b.name + " allocated twice", ErrorKind::kInternal);
  memory_[root] = driver_.allocate(b.bytes, b.placement);
  if (b.placement == Placement::kDevice) {
    device_ += b.bytes;
    peak_device_ = std::max(peak_device_, device_);
  } else {
    host_ += b.bytes;
    peak_host_ = std::max(peak_host_, host_);
  }
}

void Runtime::release(BufferId root) {
  const Buffer& b = program_.buffers.at(root);
  if (!memory_[root]) throw Error("exec: rank " + std::to_string(rank_) + ": buffer " + b.name + " freed twice", ErrorKind::kInternal);
  driver_.release(memory_[root], b.bytes, b.placement);
  memory_[root] = nullptr;
  if (b.placement == Placement::kDevice) device_ -= b.bytes;
  else host_ -= b.bytes;
}

void Runtime::initialise() {
  // Persistent buffers in program order (the planner's order): the memory they take counts from
  // before the first step, as the planner counts them from the program's prologue.
  for (const Task& t : program_.tasks)
    if (const Alloc* a = std::get_if<Alloc>(&t.op); a && persistent_[a->buffer]) allocate(a->buffer);
  ParamInit init(program_, schedule_.scenario().seed);
  for (BufferId b = 0; b < program_.buffers.size(); ++b) {
    if (!persistent_[b] || !init.holds_params(b)) continue;
    const std::vector<float> v = init.values_of(b);
    const Buffer& buf = program_.buffers[b];
    driver_.write(memory_[b], buf.dtype, buf.placement, v.data(), int64_t(v.size()));
  }
  // fp32 master copies start as their parameters: Adam's outputs {master, m, v, param}, where the
  // parameter may reach the device through a copy (optimizer offload: the Adam task updates a host
  // staging buffer that an H2D copy sends to the parameter).
  for (const Task& t : program_.tasks) {
    const Compute* c = std::get_if<Compute>(&t.op);
    if (!c || c->kernel != Kernel::kAdam || c->outputs.size() != 4 || c->outputs[0] == c->outputs[3]) continue;
    BufferId param = c->outputs[3];
    if (!persistent_[root_[param]])
      for (const Task& u : program_.tasks)
        if (const Copy* cp = std::get_if<Copy>(&u.op); cp && cp->src == param) param = cp->dst;
    const BufferId master = c->outputs[0];
    if (!persistent_[root_[master]]) continue;
    const std::vector<float> v = init.values_of(param);
    if (int64_t(v.size() * 4) != program_.buffers[master].bytes)
      throw Error("exec: rank " + std::to_string(rank_) + ": master " + program_.buffers[master].name +
                  " and parameter " + program_.buffers[param].name + " differ in size");
    const Buffer& m = program_.buffers[master];
    driver_.write(address(master), m.dtype, m.placement, v.data(), int64_t(v.size()));
  }
}

std::string Runtime::describe(TaskId id) const {
  const Task& t = program_.tasks[id];
  std::string peers;
  if (const SendRecv* m = std::get_if<SendRecv>(&t.op))
    peers = std::string(m->is_send ? ", to rank " : ", from rank ") + std::to_string(m->peer);
  else if (const Collective* c = std::get_if<Collective>(&t.op)) {
    peers = ", group " + std::to_string(c->group) + " of ranks";
    for (int r : schedule_.group(c->group).ranks) {
      peers += ' ';  // (two appends keep GCC 12's -Wrestrict false positive away)
      peers += std::to_string(r);
    }
  }
  return "task " + std::to_string(id) + " (" + kind_of(t) + " on stream " + to_string(t.stream) + peers + ")";
}

std::vector<int> Runtime::peers_of(TaskId id) const {
  const Task& t = program_.tasks[id];
  if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) return {m->peer};
  std::vector<int> out;
  if (const Collective* c = std::get_if<Collective>(&t.op))
    for (int r : schedule_.group(c->group).ranks)
      if (r != rank_) out.push_back(r);
  return out;
}

StepResult Runtime::run_step(int step) {
  const size_t n = program_.tasks.size();
  StepResult res;
  res.tasks.assign(n, {});
  std::vector<char> done(n, 0);
  std::vector<size_t> head(kStreamCount, 0);
  std::vector<Pending> inflight(kStreamCount, kFinished);
  std::vector<char> busy(kStreamCount, 0);
  // Allocs and Frees run in program order among themselves (those of the pipeline streams
  // excepted, see is_pipeline), so that live memory walks the planner's timeline
  // (shared/memory_timeline.h); without it a stream running ahead (a ZeRO-3 prefetch) allocates
  // before the frees the planner assumed, and a free running early hides the planned peak.
  size_t next_memory_op = 0;  // index into memory_ops_ of the first one not run yet
  StepContext ctx;
  ctx.step = step;
  ctx.global_batch = schedule_.scenario().strategy.global_batch;
  ctx.data = &chain_;
  ctx.options = &options_;

  driver_.begin_step();
  const Clock::time_point t0 = Clock::now();
  res.origin_s = std::chrono::duration<double>(t0.time_since_epoch()).count();
  res.memory.push_back({0.0, device_, host_});
  size_t finished = 0;
  Clock::time_point last_progress = t0;
  auto finish = [&](TaskId id, int s) {
    res.tasks[id].end_s = seconds_since(t0);
    done[id] = 1;
    ++head[s];
    busy[s] = 0;
    ++finished;
    progress_.fetch_add(1, std::memory_order_relaxed);
  };

  while (finished < n) {
    bool progressed = false;
    for (int s = 0; s < kStreamCount; ++s) {
      const std::vector<TaskId>& st = streams_[s];
      if (busy[s]) {
        if (!driver_.test(inflight[s])) continue;
        finish(st[head[s]], s);
        progressed = true;
      }
      while (head[s] < st.size()) {
        const TaskId id = st[head[s]];
        const Task& t = program_.tasks[id];
        bool ready = true;
        for (TaskId d : t.deps)
          if (!done[d]) {
            ready = false;
            break;
          }
        if (!ready) break;
        if (options_.memory_in_program_order && !is_pipeline(t.stream) &&
            (std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op))) {
          while (next_memory_op < memory_ops_.size() && done[memory_ops_[next_memory_op]]) ++next_memory_op;
          if (next_memory_op < memory_ops_.size() && memory_ops_[next_memory_op] < id) break;
        }
        res.tasks[id].start_s = seconds_since(t0);
        Pending p = kFinished;
        const TaskRef ref{id, t.stream};
        if (const Compute* c = std::get_if<Compute>(&t.op)) {
          p = driver_.compute(ref, *c, addresses(c->inputs), addresses(c->outputs), ctx);
        } else if (const Collective* c = std::get_if<Collective>(&t.op)) {
          p = driver_.collective(ref, *c, address(c->buffers.at(0)), address(c->buffers.at(1)));
        } else if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) {
          p = driver_.p2p(ref, *m, address(m->buffer));
        } else if (const Copy* c = std::get_if<Copy>(&t.op)) {
          p = driver_.copy(ref, *c, address(c->src), address(c->dst));
        } else if (const Alloc* a = std::get_if<Alloc>(&t.op)) {
          if (!persistent_[a->buffer] || !memory_[a->buffer]) {
            allocate(a->buffer);
            res.memory.push_back({seconds_since(t0), device_, host_});
          }
        } else if (const Free* f = std::get_if<Free>(&t.op)) {
          if (f->buffer == loss_) {
            float v = 0;
            const Buffer& b = program_.buffers[loss_];
            driver_.read(&v, address(loss_), b.dtype, b.placement, 1);
            res.loss_sum = v;
          }
          release(f->buffer);
          res.memory.push_back({seconds_since(t0), device_, host_});
        }
        progressed = true;
        if (p == kFinished) {
          finish(id, s);
          // One task per stream and pass: work that finished at once (a host kernel) must not
          // keep the other streams waiting, since a send, a receive or a collective whose deps
          // are done starts as soon as possible (shared/schedule.h), as on a GPU.
          break;
        }
        inflight[s] = p;
        busy[s] = 1;
        break;
      }
    }
    if (progressed) {
      last_progress = Clock::now();
      continue;
    }
    if (std::chrono::duration<double>(Clock::now() - last_progress).count() > options_.timeout_s) {
      // Name what the rank waits on: its oldest started, unfinished task, else the first blocked one.
      TaskId waiting = kNoId;
      for (int s = 0; s < kStreamCount; ++s)
        if (busy[s] && (waiting == kNoId || streams_[s][head[s]] < waiting)) waiting = streams_[s][head[s]];
      if (waiting == kNoId)
        for (int s = 0; s < kStreamCount; ++s)
          if (head[s] < streams_[s].size() && (waiting == kNoId || streams_[s][head[s]] < waiting))
            waiting = streams_[s][head[s]];
      // The ranks its started work needs (every in-flight task's).
      std::vector<int> peers;
      for (int s = 0; s < kStreamCount; ++s)
        if (busy[s])
          for (int r : peers_of(streams_[s][head[s]])) peers.push_back(r);
      throw StallError("no progress for " + std::to_string(options_.timeout_s) + " s in step " +
                           std::to_string(step + 1) + ", waiting on " + describe(waiting),
                       peers);
    }
    if (options_.yield_when_idle) sched_yield();
  }
  res.wall_s = seconds_since(t0);
  driver_.end_step(res.tasks);
  return res;
}

}  // namespace tandem::exec
