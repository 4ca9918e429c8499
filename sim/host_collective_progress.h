// A host collective progresses only while its ranks are not computing (issue 13).
//
// Why: a rank of the host driver (exec/runtime.cc, exec/host_driver.cc) is one thread. It runs a
// kernel (and an Alloc/Free) to its end, and between tasks it polls its MPI requests with
// MPI_Test; Open MPI has no progress thread here, so a nonblocking collective moves data only
// inside those calls (a large message's rendezvous and copy need both ends to poll). While a rank
// computes, the collectives it has in flight stand still. Measured on the host twin (tiny GPT
// ZeRO-3, 2 ranks, docs/exec.md session 7): the 836.5 KiB all-gathers prefetched beside kernels
// took 256 us per call, against 40 us from the collective probe (the same call with nothing
// beside it).
//
// The model, for a collective the simulator times as a fixed duration on the host platform (a
// calibration profile's collective or the probe, sim/host_collective_model.h): that duration is
// the collective's work when polled without pause; it advances only while none of its parties'
// compute streams runs a kernel (a step of the collective needs every member to poll), and stands
// still otherwise. The calibration takes the same view: it times a measured collective instance
// less the member's own kernel and Alloc/Free time inside it (traces/calibration/
// calibration_profile.cc). A kernel-by-kernel poll between kernels is not modelled (the time
// between kernels, a cost of its own, runs on the kernel's timer, sim/program_info.cc, so the
// collective stands still in it too; docs/exec.md, session 11, says why), so a collective fully
// overlapped by back-to-back kernels progresses only once the kernels stop: an upper bound on
// the stall, as "no pause" was the lower bound.
//
// Why separate: the replay (sim/replay_engine.cc) calls it at three points (a polled collective
// starts, a unit's compute stream starts or stops); everything else of the rule lives here.
#pragma once

#include <cstdint>
#include <functional>
#include <unordered_map>
#include <vector>

#include "sim/net_op.h"
#include "sim/timer_queue.h"

namespace tandem::sim {

class HostCollectiveProgress {
 public:
  // computing(unit): whether that replayed unit's compute stream runs a kernel now.
  HostCollectiveProgress(TimerQueue& timers, NetOpPool& ops, std::function<bool(int)> computing)
      : timers_(timers), ops_(ops), computing_(std::move(computing)) {}

  // Network op `op` (a collective, every party posted) needs work_s of polled time from now.
  void start(uint32_t op, double work_s, double now);
  // Unit `unit`'s compute stream starts a kernel: its collectives in flight stand still.
  void compute_started(int unit, double now);
  // Unit `unit`'s compute stream stopped: its collectives whose parties all poll run again.
  void compute_stopped(int unit, double now);
  // A Timer::kPolledOpDone fired: true when it is the op's current one (the op is over and
  // forgotten here); false for a timer of a run the op was paused in.
  bool done(uint32_t op, uint32_t generation);
  size_t in_flight() const { return state_.size(); }

 private:
  struct State {
    double left_s = 0;        // polled work left, as of since_s when running
    double since_s = 0;       // when it last started running
    uint32_t generation = 0;  // the current timer's
    bool running = false;
  };
  void run(uint32_t op, State& s, double now);
  bool parties_poll(uint32_t op) const;

  TimerQueue& timers_;
  NetOpPool& ops_;
  std::function<bool(int)> computing_;
  uint32_t generations_ = 0;
  std::unordered_map<uint32_t, State> state_;
  std::unordered_map<int, std::vector<uint32_t>> of_unit_;  // the ops in flight a unit is party to
};

}  // namespace tandem::sim
