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
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <tuple>
#include <memory>
#include <queue>
#include <unordered_map>
#include <vector>

#include <simgrid/s4u.hpp>

#include "shared/error.h"
#include "sim/nccl_tuner.h"
#include "sim/simulation.h"

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
  struct ProgramInfo;
  struct RankState;
  struct NetOp;
  struct Party {
    int32_t unit;  // index in ranks_ (the rank itself unless folded)
    TaskId task;
    double issued_s;
  };
  struct Timer {
    double t;
    uint64_t seq;
    uint8_t kind;
    uint32_t a, b, c;
    bool operator>(const Timer& o) const { return t != o.t ? t > o.t : seq > o.seq; }
  };
  enum TimerKind : uint8_t { kComputeDone, kNetOpPhaseDone };
  class Oom {};

  void prepare();
  std::shared_ptr<ProgramInfo> analyse(Program program) const;
  void scan_exclusive_groups();
  int choose_fold();
  int unit_of(int rank) const { return rank / fold_; }
  void run_loop();
  void pump(int rank);
  bool deps_done(const RankState& r, const Task& t) const;
  void start_task(RankState& r, TaskId id);
  void finish_task(RankState& r, TaskId id, double start_s, double end_s);
  void account(RankState& r, double t);
  void memory_event(RankState& r, const Task& t, bool alloc);
  void issue_collective(RankState& r, TaskId id, const Collective& c);
  void issue_p2p(RankState& r, TaskId id, const SendRecv& s);
  void issue_copy(RankState& r, TaskId id, const Copy& c);
  uint32_t new_op();
  void launch(uint32_t op);
  void start_phase(uint32_t op);
  void phase_flows_done(uint32_t op);
  void complete_op(uint32_t op);
  void add_timer(double t, uint8_t kind, uint32_t a, uint32_t b = 0, uint32_t c = 0);
  void on_timer(const Timer& t);
  void on_flow_done(size_t index);
  [[noreturn]] void deadlock() const;

  const Schedule& schedule_;
  const SimOptions& options_;
  const Platform& platform_;
  const FabricModel& fabric_;
  const ComputeCostModel& costs_;
  NcclTuner& tuner_;

  std::vector<std::shared_ptr<ProgramInfo>> infos_;  // by rank (shared within a class)
  std::vector<RankState> ranks_;
  std::vector<uint8_t> group_exclusive_;  // by group id: closed form allowed
  // Usage of groups and peers by each distinct program (filled by scan_exclusive_groups).
  struct Usage {
    std::map<GroupId, int> group_stream;  // -1: several streams
    std::vector<int> peers;               // sorted, unique
  };
  std::map<const ProgramInfo*, Usage> usage_;
  int fold_ = 1;                                   // ranks per replayed state (tp lanes)
  std::vector<uint32_t> group_parties_;            // by group: states that must issue a collective
  std::vector<std::vector<GroupId>> lane_groups_;  // by lane-0 group: its group in every lane

  std::vector<NetOp> ops_;
  std::vector<uint32_t> free_ops_;
  std::unordered_map<uint64_t, uint32_t> pending_collectives_;  // (group, seq) -> op
  struct PairQueue;
  std::unordered_map<uint64_t, std::unique_ptr<PairQueue>> pairs_;  // (src, dst) -> pending posts

  struct CollectiveKey {
    GroupId group;
    uint8_t op;
    int32_t root;
    int64_t bytes;
    bool operator==(const CollectiveKey&) const = default;
  };
  struct CollectiveKeyHash {
    size_t operator()(const CollectiveKey& k) const {
      return std::hash<uint64_t>()((uint64_t(k.group) << 40) ^ (uint64_t(k.op) << 32) ^ uint64_t(uint32_t(k.root)) ^
                                   (uint64_t(k.bytes) * 0x9e3779b97f4a7c15ull));
    }
  };
  struct CollectiveEntry {
    ProtocolCost cost;
    std::shared_ptr<const CollectivePlan> plan;  // folded lane groups: every lane's flows
    double closed_form_s = 0;                    // exclusive groups
  };
  std::unordered_map<CollectiveKey, CollectiveEntry, CollectiveKeyHash> collective_cache_;
  std::vector<int64_t> node_host_bytes_;
  int64_t hbm_bytes_ = 0;

  std::priority_queue<Timer, std::vector<Timer>, std::greater<Timer>> timers_;
  uint64_t timer_seq_ = 0;
  std::vector<simgrid::s4u::CommPtr> active_;
  std::vector<uint32_t> active_op_;
  std::vector<uint32_t> active_slot_;  // the flow's slot in its lane (folded ops)
  double now_ = 0;
  double offset_ = 0;  // now_ = SimGrid clock + offset_ (time jumps while no flow is in flight)

  SimResult result_;
  std::string error_;
  ErrorKind error_kind_ = ErrorKind::kBadInput;
};

}  // namespace tandem::sim
