#include "sim/sim_memory_estimate.h"

#include <algorithm>
#include <variant>

#include "shared/rank_grid.h"
#include "shared/resource_limit.h"
#include "sim/nccl_tuner.h"
#include "sim/platform_builder.h"

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
// Folding may be declined at run time (sim/replay_engine.cc choose_fold) or rerun unfolded when
// not exact; the estimate assumes it is taken where the options and the strategy allow it.
namespace {

constexpr int64_t kBase = int64_t(64) << 20;
constexpr int64_t kProgramPerTask = 350;
constexpr int64_t kPerRank = 512;
constexpr int64_t kRecordingPerEntry = 2 * 32;
constexpr int64_t kRecordPerTask = 120;
constexpr int64_t kTimelinePerEvent = 45 + 160;

// The fold sim/fold_planner.h will take where the options and the layout allow it (its per-program
// checks aside: the estimate assumes they pass), and by how much the flow or lane quotient divides
// the SimGrid flows of a symmetric op.
struct ExpectedLayout {
  int fold = 1;
  bool grid = false;     // units are pipeline stages, lanes every replica's tp lanes
  bool replica = false;  // pure data parallelism: one unit
  int gpus_per_nic = 1;  // k
  int lane_stride = 0;   // the lane quotient's s (0: not taken)
};

// Platform::private_routes: no leaf switches (a non-blocking fabric, or every node under one leaf).
bool private_routes(const ClusterSpec& c, const SimOptions& o, int world) {
  const int gpn = std::max(1, c.gpus_per_node), nics = std::max(1, c.nics_per_node);
  const int nodes = (world + gpn - 1) / gpn;
  int per_leaf = o.fabric.nodes_per_leaf;
  if (per_leaf <= 0) per_leaf = c.inter_node_topology == Topology::kRailOptimized ? 32 : std::max(1, 32 / nics);
  return !(c.oversubscription > 1.0 && nodes > per_leaf);
}

// across_replicas: false leaves out replica and grid folding (the layout of the rerun with the tp
// lanes alone, which simulate() takes where a fold's lanes part).
ExpectedLayout expected_layout(const Schedule& schedule, const SimOptions& o, bool across_replicas = true) {
  const StrategySpec& s = schedule.scenario().strategy;
  const ClusterSpec& c = schedule.scenario().cluster;
  const int n = schedule.world_size(), gpn = std::max(1, c.gpus_per_node), nics = std::max(1, c.nics_per_node);
  ExpectedLayout e;
  e.gpus_per_nic = nics >= gpn ? 1 : gpn / nics;
  const bool base = o.closed_form_uncontended && o.share_class_programs;
  const bool nic_ok = nics >= gpn || (gpn % nics == 0 && (s.tp % e.gpus_per_nic == 0 || e.gpus_per_nic % s.tp == 0));
  const bool priv = private_routes(c, o, n);
  // Replica folding (FoldPlanner::choose_replica_fold).
  if (base && across_replicas && o.fold_data_parallel && s.tp == 1 && s.pp == 1 && s.sp == 1 && n > 1) {
    e.fold = n;
    e.replica = true;
    return e;
  }
  // Grid folding (FoldPlanner::choose_grid_fold): dp x tp lanes per pipeline stage.
  if (base && across_replicas && o.fold_data_parallel && (s.tp == 1 || o.fold_tensor_parallel) && s.sp == 1 && s.dp > 1 &&
      (s.tp > 1 || s.pp > 1) && priv && gpn % s.tp == 0 && (s.pp * s.tp) % gpn == 0 && nic_ok) {
    e.fold = s.dp * s.tp;
    e.grid = true;
    // The lane quotient (FoldPlanner::choose_lane_quotient): stride k, or tp where tp divides k.
    const int k = e.gpus_per_nic;
    const int stride = s.tp % k == 0 ? k : (k % s.tp == 0 ? s.tp : 0);
    if (o.fold_flows && o.fold_lanes && stride > 0 && e.fold / stride > 1) e.lane_stride = stride;
    return e;
  }
  // Tensor-parallel folding (FoldPlanner::choose_fold).
  if (base && o.fold_tensor_parallel && !schedule.scenario().software.tp_comm_overlap && s.tp > 1 && s.sp == 1 &&
      gpn % s.tp == 0 && nic_ok)
    e.fold = s.tp;
  return e;
}

}  // namespace

SimWork count_sim_work(const Schedule& schedule, const SimOptions& options) {
  SimWork w;
  w.world = schedule.world_size();
  ExpectedLayout e = expected_layout(schedule, options);
  const ClusterSpec& cl = schedule.scenario().cluster;
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
  // path runs again with the tp lanes alone (docs/sim.md "Why lanes part"), which is then what it
  // costs. Without pipeline messages nothing else crosses the NICs and the fold holds, as the tests
  // of the simulator show; --approximate keeps the folded run. Conservative: a tree that meets no
  // pipeline message (a small all-reduce across replicas, at 8192 GPUs of GPT-3 t8 p16) leaves
  // the fold whole, and the estimate then counts a rerun that does not happen.
  if (e.grid && schedule.scenario().strategy.pp > 1 && !options.approximate) {
    const NetworkEfficiency eff = options.ideal_network ? NetworkEfficiency{1.0, 1.0, 1.0} : options.efficiency;
    NcclTuner tuner(fabric_model(cl, eff, gpn, std::max(1, cl.nics_per_node)), options.ideal_network, options.algorithm,
                    options.protocol);
    for (const Spanning& sp : spanning) {
      const std::vector<int>& ranks = schedule.group(sp.group).ranks;
      bool across = false;  // members in other replicas
      for (int r : ranks) across = across || grid.coord(r).dp != grid.coord(ranks.front()).dp;
      if (sp.op != CollectiveOp::kAllReduce || !across) continue;
      if (tuner.choose(sp.op, schedule.group(sp.group).ranks, double(sp.bytes)).algorithm == Algorithm::kTree) {
        e = expected_layout(schedule, options, /*across_replicas=*/false);
        break;
      }
    }
  }
  w.fold = e.fold;
  w.units = w.world / w.fold;
  for (const Spanning& sp : spanning) {
    const std::vector<int>& ranks = schedule.group(sp.group).ranks;
    // Folded, one state's collective launches the flows of every lane's group at once
    // (FlowLauncher: op_lanes): the group's siblings inside the unit (fold / n of them), or one per
    // lane for a group across units. Per member that is n x lanes (see SimWork).
    double lanes = 1;
    if (e.fold > 1) {
      bool internal = e.replica;
      if (e.grid) {
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
  const bool shared_host_links = copies && (cl.gpus_per_pcie_switch > 1 || cl.host_memory_bandwidth_gbps > 0);
  const int tp = schedule.scenario().strategy.tp, k = e.gpus_per_nic;
  if (!shared_host_links && e.lane_stride > 0) {
    w.flow_quotient = e.fold / e.lane_stride;
  } else if (!shared_host_links && options.fold_flows && (e.grid || e.fold == tp) && tp > 1 && tp % k == 0 && k < tp &&
             private_routes(cl, options, schedule.world_size())) {
    w.flow_quotient = tp / k;
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
