#include "sim/sim_memory_estimate.h"

#include <algorithm>
#include <variant>

#include "shared/rank_grid.h"
#include "shared/resource_limit.h"
#include "sim/fold_planner.h"
#include "sim/nccl_tuner.h"
#include "sim/platform_builder.h"
#include "sim/replica_classes.h"

namespace tandem::sim {

// The estimate, term by term (bytes). The constants were fitted on GPT-3 175B (t8 p16) at 4096,
// 2048 and 1024 GPUs (0.72, 1.44 and 2.87 million class tasks: 237, 402 and 900 MB peak resident).
// Checked against the peak resident size (VmHWM) of the parent plus the simulation process:
// GPT-3 1024 GPUs --json: 1.0 GiB estimated, 0.98 GiB measured (120 + 879 MiB); with --trace:
// 3.4 GiB estimated, 2.9 GiB measured (114 + 2958 MiB); Llama 2 70B --trace: 0.2 GiB estimated,
// 0.19 GiB measured (57 + 141 MiB). Terms:
//  - kBase: the binary, SimGrid, protobuf, the Schedule.
//  - programs: each class program is generated and analysed once in the simulation process:
//    Task structs, dependency lists, per-task replay tables. 350 B a task (the measured slope is
//    230 to 350 B).
//  - replay states: one per replayed unit (the tp lanes of a (dp, pp) coordinate are one unit when
//    tensor-parallel folding is on, sim/replay_engine.h): a done bit per task, a byte per buffer,
//    plus the per-rank tables of the platform and the replay (kPerRank).
//  - trace (--trace or --timeline): the replay records each task (32 B) and each Alloc/Free (32 B)
//    once per unit; the vectors grow by doubling and the simulation process keeps freed blocks in
//    its heap, so twice that. Writing the file holds one rank record at a time (kRecordPerTask).
//  - timeline: the parent reads the whole trace back (45 B an event in memory) and builds the
//    Chrome JSON text (about 160 B an event).
// The fold is the one FoldPlanner::layout_fold says the options, the grid and the platform allow
// (the planner's own first choice; its per-program checks are assumed to pass, and a fold they
// refuse is replayed less folded: more states than counted here). Where the run is known to part
// its lanes and run again (the tree below), the estimate asks the planner again with the rerun's
// options, as simulate() runs it.
namespace {

constexpr int64_t kBase = int64_t(64) << 20;
constexpr int64_t kProgramPerTask = 350;
constexpr int64_t kPerRank = 512;
constexpr int64_t kRecordingPerEntry = 2 * 32;
constexpr int64_t kRecordPerTask = 120;
constexpr int64_t kTimelinePerEvent = 45 + 160;

}  // namespace

SimWork count_sim_work(const Schedule& schedule, const SimOptions& options) {
  SimWork w;
  w.world = schedule.world_size();
  const ClusterSpec& cl = schedule.scenario().cluster;
  const FoldShape shape = FoldShape::of(cl, w.world, options.fabric);
  LayoutFold e = FoldPlanner::layout_fold(schedule, options, shape);
  const int gpn = std::max(1, cl.gpus_per_node);
  const RankGrid& grid = schedule.grid();
  bool copies = false;
  // The collectives whose groups span nodes (the square term), each with the ranks taking it.
  struct Spanning {
    GroupId group;
    CollectiveOp op;
    int64_t bytes;
    int64_t ranks;
  };
  std::vector<Spanning> spanning;
  for (const RankClass& c : schedule.rank_classes()) {
    const Program p = schedule.program(c.representative);
    const int64_t tasks = int64_t(p.tasks.size()), members = c.count;
    int64_t allocs = 0;
    for (const Task& t : p.tasks) {
      allocs += std::holds_alternative<Alloc>(t.op) || std::holds_alternative<Free>(t.op);
      copies = copies || std::holds_alternative<Copy>(t.op);
      if (const auto* coll = std::get_if<Collective>(&t.op)) {
        const std::vector<int>& ranks = schedule.group(coll->group).ranks;
        const auto [lo, hi] = std::minmax_element(ranks.begin(), ranks.end());
        if (!ranks.empty() && *lo / gpn != *hi / gpn) spanning.push_back({coll->group, coll->op, coll->bytes, members});
      }
    }
    w.class_tasks = checked_add(w.class_tasks, tasks, "memory estimate");
    w.max_tasks = std::max(w.max_tasks, tasks);
    w.max_buffers = std::max(w.max_buffers, int64_t(p.buffers.size()));
    w.rank_tasks = checked_add(w.rank_tasks, checked_mul(members, tasks, "memory estimate"), "memory estimate");
    w.rank_entries =
        checked_add(w.rank_entries, checked_mul(members, tasks + allocs, "memory estimate"), "memory estimate");
  }
  // Where NCCL's tuner (the simulator's, sim/nccl_tuner.h) picks the double binary tree for an
  // all-reduce across replicas under grid folding with pipeline stages, the tree (not symmetric
  // under a replica move) meets the pipeline messages on the NICs and the lanes part: the exact
  // path runs again with one state per stage and class of replicas (docs/sim.md "Replica
  // classes"; SimOptions::fold_replica_classes), else with the tp lanes alone ("Why lanes part"),
  // which is then what it costs. Counted: the equitable classes of that tree's plan (the rerun
  // tries the coarser one-round classes first, and other collectives joining replicas may refine
  // the classes further). Without pipeline messages nothing else crosses the NICs and the fold
  // holds, as the tests of the simulator show; --approximate keeps the folded run. Conservative: a
  // tree that meets no pipeline message (a small all-reduce across replicas, at 8192 GPUs of GPT-3
  // t8 p16) leaves the fold whole, and the estimate then counts a rerun that does not happen; so
  // does the default megatron-core-0.8 schedule of GPT-3 t8 p16 at 10k-16k GPUs, whose later
  // stages reduce after their last backward (docs/sim.md "Speed at 64-16k GPUs").
  const bool grid_fold = e.kind == LayoutFold::Kind::kGrid;
  int replica_classes = 0;  // the replica-class fold's classes (0: not that fold)
  if (grid_fold && schedule.scenario().strategy.pp > 1 && !options.approximate) {
    const NetworkEfficiency eff = options.ideal_network ? NetworkEfficiency{1.0, 1.0, 1.0} : options.efficiency;
    const FabricModel fabric = fabric_model(cl, eff, gpn, std::max(1, cl.nics_per_node));
    NcclTuner tuner(fabric, options.ideal_network, options.algorithm, options.protocol);
    for (const Spanning& sp : spanning) {
      const std::vector<int>& ranks = schedule.group(sp.group).ranks;
      bool across = false;  // members in other replicas
      for (int r : ranks) across = across || grid.coord(r).dp != grid.coord(ranks.front()).dp;
      if (sp.op != CollectiveOp::kAllReduce || !across) continue;
      if (tuner.choose(sp.op, schedule.group(sp.group).ranks, double(sp.bytes)).algorithm == Algorithm::kTree) {
        if (options.fold_replica_classes) {
          std::vector<ReplicaEdge> edges;
          add_plan_edges(plan_collective(sp.op, ranks, 0, double(sp.bytes), Algorithm::kTree, options.granularity, fabric),
                         0, grid, edges);
          const std::vector<int> cls = equitable_classes(grid.dp(), edges);
          replica_classes = *std::max_element(cls.begin(), cls.end()) + 1;
          e.lane_stride = 0;  // the rerun's fold takes the tp-only flow quotient, not the lane quotient
        } else {
          SimOptions tp_only = options;  // simulate()'s rerun with the tp lanes alone folded
          tp_only.fold_data_parallel = false;
          e = FoldPlanner::layout_fold(schedule, tp_only, shape);
        }
        break;
      }
    }
  }
  w.fold = e.fold;
  w.units = w.world / w.fold;
  if (replica_classes > 0) {  // units of unequal size: (stage, class); fold: the mean, rounded down
    w.units = int64_t(grid.pp()) * replica_classes;
    w.fold = int(std::max<int64_t>(1, w.world / w.units));
  }
  for (const Spanning& sp : spanning) {
    const std::vector<int>& ranks = schedule.group(sp.group).ranks;
    // Folded, one state's collective launches the flows of every lane's group at once
    // (FlowLauncher: op_lanes): the group's siblings inside the unit (fold / n of them), or one per
    // lane for a group across units. Per member that is n x lanes (see SimWork).
    double lanes = 1;
    if (e.fold > 1) {
      bool internal = e.kind == LayoutFold::Kind::kReplica;
      if (e.kind == LayoutFold::Kind::kGrid) {
        internal = true;
        for (int r : ranks) internal = internal && grid.coord(r).pp == grid.coord(ranks.front()).pp;
      }
      lanes = internal ? double(e.fold) / double(ranks.size()) : double(e.fold);
    }
    w.collective_square += double(sp.ranks) * double(ranks.size()) * lanes;
  }
  // The quotients (FoldPlanner::choose_lane_quotient, choose_flow_quotient) put 1/q of a symmetric
  // op's flows in SimGrid: the square term by q^2. Refused where copies cross a link several GPUs
  // share (a PCIe switch uplink, host memory).
  const bool shared_host_links = copies && FoldPlanner::shared_host_links(cl);
  const int tp = schedule.scenario().strategy.tp;
  if (!shared_host_links && e.lane_stride > 0) {
    w.flow_quotient = e.fold / e.lane_stride;
  } else if (!shared_host_links && e.flow_stride > 0 && e.fold > 1) {
    w.flow_quotient = tp / e.flow_stride;
  }
  w.collective_square /= double(w.flow_quotient) * double(w.flow_quotient);
  return w;
}

MemoryEstimate estimate_memory(const SimWork& w, bool tracing, bool timeline) {
  int64_t bytes = kBase;
  bytes = checked_add(bytes, checked_mul(w.class_tasks, kProgramPerTask, "memory estimate"), "memory estimate");
  bytes = checked_add(bytes, checked_mul(w.units, w.max_tasks / 8 + w.max_buffers, "memory estimate"),
                      "memory estimate");
  bytes = checked_add(bytes, checked_mul(w.world, kPerRank, "memory estimate"), "memory estimate");
  std::string how = std::to_string(w.class_tasks) + " tasks in class programs x " + std::to_string(kProgramPerTask) +
                    " B, " + std::to_string(w.units) + " replay states of up to " + std::to_string(w.max_tasks) +
                    " tasks, " + std::to_string(w.world) + " ranks x " + std::to_string(kPerRank) + " B";
  if (tracing || timeline) {
    // Entries recorded: every rank's, divided among the fold lanes that share them.
    const int64_t recorded = w.rank_entries / w.fold;
    bytes = checked_add(bytes, checked_mul(recorded, kRecordingPerEntry, "memory estimate"), "memory estimate");
    bytes = checked_add(bytes, checked_mul(w.max_tasks, kRecordPerTask, "memory estimate"), "memory estimate");
    how += ", " + std::to_string(recorded) + " recorded times and memory samples x " +
           std::to_string(kRecordingPerEntry) + " B";
  }
  if (timeline) {
    bytes = checked_add(bytes, checked_mul(w.rank_tasks, kTimelinePerEvent, "memory estimate"), "memory estimate");
    how += ", " + std::to_string(w.rank_tasks) + " timeline events x " + std::to_string(kTimelinePerEvent) + " B";
  }
  return {bytes, how};
}

MemoryEstimate estimate_memory(const Schedule& schedule, const SimOptions& options, bool timeline) {
  return estimate_memory(count_sim_work(schedule, options), !options.trace_path.empty() || timeline, timeline);
}

}  // namespace tandem::sim
