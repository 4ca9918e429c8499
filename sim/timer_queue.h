// The replay's own event queue: the moments at which something that is not a SimGrid flow ends.
//
// Why it exists: compute (and host work, device copies) is an exact timer (one compute stream per
// GPU, a kernel's duration depends on nothing else running), and the latency the replay adds
// after a network phase is a fixed delay; neither needs SimGrid. The event loop (ReplayEngine)
// waits on SimGrid's flows with the earliest timer as timeout. Ties are broken by insertion order
// (`seq`), so the replay is deterministic.
#pragma once

#include <cstdint>
#include <functional>
#include <queue>
#include <vector>

namespace tandem::sim {

struct Timer {
  enum Kind : uint8_t {
    kComputeDone,   // a compute-like task (and those fused after it) ends
    kNetPhaseDone,  // a network op's phase ended, latency included: start its next phase or complete it
    kNetOpDone,     // a network op is over (closed form, calibrated, or nothing to move)
    kNetFlowsDone,  // the flows of a phase costed alone end (first_task: the op's generation)
    kPolledOpDone,  // a host collective's polled work ends (sim/host_collective_progress.h; first_task: generation)
    kLaunchOp,      // a host collective starts after the slower rank's lag (sim/rank_speed_lag.h)
    kSharedComputeDone,  // a compute run on shared cores may end (sim/host_core_share.h; first_task: generation)
  };
  double t = 0;
  uint64_t seq = 0;  // insertion order: breaks ties
  Kind kind = kComputeDone;
  uint32_t target = 0;      // kComputeDone: the replayed state (unit); else the network op
  uint32_t first_task = 0;  // kComputeDone: the first task of the fused run
  uint32_t task_count = 0;  // kComputeDone: how many tasks the run has (1 when not fused)
  bool operator>(const Timer& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

class TimerQueue {
 public:
  void compute_done(double t, uint32_t unit, uint32_t first_task, uint32_t count) {
    push(t, Timer::kComputeDone, unit, first_task, count);
  }
  void net_phase_done(double t, uint32_t op) { push(t, Timer::kNetPhaseDone, op, 0, 0); }
  void net_op_done(double t, uint32_t op) { push(t, Timer::kNetOpDone, op, 0, 0); }
  void net_flows_done(double t, uint32_t op, uint32_t generation) { push(t, Timer::kNetFlowsDone, op, generation, 0); }
  void polled_op_done(double t, uint32_t op, uint32_t generation) { push(t, Timer::kPolledOpDone, op, generation, 0); }

  void launch_op(double t, uint32_t op) { push(t, Timer::kLaunchOp, op, 0, 0); }
  void shared_compute_done(double t, uint32_t unit, uint32_t generation) {
    push(t, Timer::kSharedComputeDone, unit, generation, 0);
  }

  bool empty() const { return heap_.empty(); }
  const Timer& top() const { return heap_.top(); }
  void pop() { heap_.pop(); }

 private:
  void push(double t, Timer::Kind kind, uint32_t target, uint32_t first_task, uint32_t count) {
    heap_.push({t, seq_++, kind, target, first_task, count});
  }
  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> heap_;
  uint64_t seq_ = 0;
};

}  // namespace tandem::sim
