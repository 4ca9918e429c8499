// The replay: one SimGrid actor drives every rank of the schedule.
//
// Why one actor and not one per rank or stream: a GPU's streams only interact through
// dependencies, and a kernel's duration does not depend on anything else running (one compute
// stream per GPU), so compute is an exact timer in the replay's own event queue; only data
// movement needs SimGrid, whose flow model shares links between whatever flows are in flight.
// The actor keeps the list of flows in flight and waits for the first of them to finish or for
// its next timer (Comm::wait_any_for), so that time advances in SimGrid and contention between
// any collectives, p2p messages and offload copies comes from SimGrid's max-min sharing.
//
// Semantics (shared/schedule.h): a task starts when the previous task of its stream and all its
// deps are done. A collective starts moving data when every member of its group has issued it
// (members issue a group's collectives in the same order: the n-th of each member match); the
// n-th send a->b meets the n-th receive at b from a and moves once both are posted. Alloc and
// Free take no time and are accounted per device (host placement: per node); an allocation that
// does not fit stops the simulation with an OomReport.
//
// Tensor-parallel folding (SimOptions::fold_tensor_parallel, docs/sim.md): when the tp ranks of
// every (dp, pp) coordinate run one class program, their tensor-parallel group is closed-form
// (exclusive NVLink ports) and the platform treats the tp lanes alike, the replay keeps ONE state
// per tp group (a "unit"). Compute, memory and the tp group's collectives happen once; every p2p,
// copy and collective of a group spanning units still launches the flows of all tp lanes (lane m
// of a unit talks to lane m of its peers), so all contending traffic is in SimGrid. Ranks of a
// unit get the unit's timings and statistics.
//
// Replica folding (SimOptions::fold_data_parallel): a pure data-parallel schedule is one unit of
// all ranks, its data-parallel group internal (FoldPlanner::choose_replica_fold).
//
// Parts (docs/sim.md "Replay"): ReplayEngine is the event loop: it starts tasks when their
// stream and deps allow, finishes them, accounts each state's time, and delegates the rest:
//   ProgramInfo (program_info.h)      per-program analysis: streams, task costs, compute fusion
//   FoldPlanner (fold_planner.h)      exclusive groups (closed forms) and tensor-parallel folding
//   NetOpMatcher (net_op_matcher.h)   matching collective and p2p posts into network ops
//   FlowLauncher (flow_launcher.h)    network ops as SimGrid flows: plans, phases, latency, lanes
//   MemoryLedger (memory_ledger.h)    Alloc/Free accounting, peaks, memory samples, OOM report
//   TimerQueue (timer_queue.h)        the replay's own events (compute ends, phase latencies)
//   HostCollectiveProgress            host platform: a calibrated collective stands still while
//     (host_collective_progress.h)      its ranks compute (one thread polls MPI between tasks)
//   HostCoreShare (host_core_share.h) host platform: ranks beyond the machine's cores share them
//   deadlock_report (deadlock_report.h), ReplayProgress (replay_progress.h)
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shared/error.h"
#include "sim/flow_launcher.h"
#include "sim/fold_planner.h"
#include "sim/host_collective_progress.h"
#include "sim/host_core_share.h"
#include "sim/memory_ledger.h"
#include "sim/nccl_tuner.h"
#include "sim/collective_gaps.h"
#include "sim/net_op.h"
#include "sim/net_op_matcher.h"
#include "sim/program_info.h"
#include "sim/rank_speed_lag.h"
#include "sim/rank_state.h"
#include "sim/replay_progress.h"
#include "sim/simulation.h"
#include "sim/timer_queue.h"

namespace tandem::sim {

class ReplayEngine {
 public:
  ReplayEngine(const Schedule& schedule, const SimOptions& options, const Platform& platform,
               const FabricModel& fabric, const ComputeCostModel& costs, NcclTuner& tuner);
  ~ReplayEngine();

  void operator()();  // the actor's body: replays the whole iteration
  SimResult take_result();
  // A schedule that cannot run (mismatched posts, deadlock, bad buffer) stops the replay; the
  // message is kept here because exceptions must not leave a SimGrid actor.
  bool failed() const { return !error_.empty(); }
  Error error() const { return Error(error_, error_kind_); }

 private:
  void prepare();
  void run_loop();
  void count_event();
  void pump(int unit);
  bool deps_done(const RankState& r, const Task& t) const;
  void start_task(RankState& r, TaskId id);
  void finish_task(RankState& r, TaskId id, double start_s, double end_s, bool record = true);
  void launch(uint32_t op);
  Component component_of(const NetOp& o);  // NVLink or NIC (group on one node or not), p2p, PCIe
  void on_timer(const Timer& t);
  void compute_done(const Timer& t);
  void complete_op(uint32_t op);
  void cancel_flows();

  const Schedule& schedule_;
  const SimOptions& options_;
  const Platform& platform_;
  const FabricModel& fabric_;
  const ComputeCostModel& costs_;
  NcclTuner& tuner_;

  std::vector<std::shared_ptr<ProgramInfo>> infos_;  // by rank (shared within a class)
  std::optional<FoldPlanner> layout_;
  int fold_ = 1;                   // ranks per replayed state (tp lanes)
  std::vector<RankState> ranks_;   // by unit
  std::optional<MemoryLedger> memory_;
  NetOpPool ops_;
  std::optional<NetOpMatcher> matcher_;
  std::optional<FlowLauncher> flows_;
  std::optional<HostCollectiveProgress> polled_;  // the host platform with a calibration
  std::optional<CollectiveGaps> gaps_;            // likewise (sim/collective_gaps.h)
  std::optional<HostCoreShare> cores_;  // and ranks x BLAS threads beyond its cores (sim/host_core_share.h)
  std::optional<RankSpeedLag> lag_;  // and a profile that measured the ranks' spread (sim/rank_speed_lag.h)
  TimerQueue timers_;
  std::vector<int8_t> group_crosses_nodes_;  // by group id: -1 not yet known
  double now_ = 0;
  double offset_ = 0;  // now_ = SimGrid clock + offset_ (time jumps while no flow is in flight)
  uint64_t tasks_total_ = 0, tasks_left_ = 0;  // over the replayed states (progress line)
  ReplayProgress progress_;

  SimResult result_;
  std::string error_;
  ErrorKind error_kind_ = ErrorKind::kBadInput;
};

}  // namespace tandem::sim
