// The SimGrid backend's entry point: replay a Schedule on the modeled cluster of its scenario and
// say what one training iteration costs.
//
//   SimResult r = tandem::sim::simulate(schedule, SimOptions{});
//
// Each call builds a fresh SimGrid world. SimGrid keeps process-wide state (its clock and its
// network model cannot be reset), so by default the simulation runs in a forked child process
// and the result comes back through a pipe: any number of simulations per process, each from
// time zero, bit-for-bit reproducible.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "shared/schedule.h"
#include "sim/collective_algorithms.h"
#include "sim/compute_cost_model.h"
#include "sim/cost_component.h"
#include "sim/platform_builder.h"

namespace tandem::sim {

struct SimOptions {
  // Collectives: one flow per ring step (validation) or per phase (scale).
  Granularity granularity = Granularity::kPhase;
  // Force an algorithm (ring or tree; others keep their only one) or a protocol; else NCCL-like tuning.
  std::optional<Algorithm> algorithm;
  std::optional<Protocol> protocol;
  // Plain alpha-beta network: links at datasheet bandwidth, no protocol costs. The closed-form tests
  // use it; predictions do not.
  bool ideal_network = false;
  // Achievable fraction of each fabric's datasheet bandwidth (docs/sim.md: fit on
  // traces/reference/nccl_*.tsv). Ignored when ideal_network.
  NetworkEfficiency efficiency{0.80, 0.955, 0.87};
  KernelEfficiency kernels;
  FabricShape fabric;
  std::shared_ptr<const CalibrationTable> calibration;
  // Memory the runtime holds on every GPU before the first Alloc (CUDA context, NCCL buffers).
  int64_t reserved_device_bytes = 0;

  // Speed shortcuts (docs/sim.md); each can be turned off to check it against the full path.
  bool closed_form_uncontended = true;  // closed-form time for collectives whose links nothing else uses
  bool fuse_compute = true;             // consecutive compute tasks nothing else waits on: one event
  bool share_class_programs = true;     // generate one program per rank class
  // Replay the tp ranks of one (dp, pp) coordinate as one state where that is provably exact
  // (sim/replay_engine.h, docs/sim.md); needs the two shortcuts above.
  bool fold_tensor_parallel = true;
  // Replay the data-parallel replicas of a pure data-parallel schedule (tp = pp = sp = 1, every
  // group the whole world) as one state (sim/fold_planner.h, docs/sim.md); needs the same two.
  bool fold_data_parallel = true;
  // With grid folding and tp > 1: simulate in SimGrid only the flows of the first tp lane(s),
  // the others being their images under a symmetry of the platform (docs/sim.md "Flow quotient").
  bool fold_flows = true;
  // With grid folding and fold_flows: the lane quotient (docs/sim.md "Lane quotient"): of the
  // flows of all lanes of a unit only one per orbit of the replica and tp moves goes to SimGrid.
  bool fold_lanes = true;
  // Where grid folding's replicas part (NCCL's double binary tree over them: docs/sim.md "Replica
  // classes"), simulate() runs again with one state per pipeline stage and class of replicas that
  // see the same flows (FoldPlanner::choose_class_fold) before folding the tp lanes alone.
  bool fold_replica_classes = true;
  // Set by simulate() for that rerun (not for callers): the rounds of refinement of the replica
  // classes (sim/replica_classes.h); 0: no replica-class fold; kEquitable: the coarsest equitable
  // partition (provably exact, docs/sim.md "Replica classes"); 1: by the flows on each replica's
  // own links alone (exact only where the run's own check passes; not used by simulate()).
  static constexpr int kEquitable = 1 << 30;
  int replica_class_rounds = 0;
  // The approximate tier (docs/sim.md "Approximate tier"): a folded run whose lanes part (an
  // asymmetric collective, NCCL's double binary tree over the replicas, met other traffic) is kept
  // instead of being run again less folded: each orbit of flows moves at its representative's
  // rate, and every lane's timeline is its unit's lane 0's. The result says so
  // (SimResult::approximate) with the simulated time the approximation was in effect. Where no
  // lane parts the result is the exact one, bit for bit.
  bool approximate = false;

  // What to keep besides the summary.
  bool record_tasks = false;   // every task's start and end, per rank, in SimResult::tasks
  bool record_memory = false;  // every Alloc/Free's effect on device and host memory, per rank
  // Write the predicted trace here (tandem trace format, traces/trace_writer.h). The simulation's
  // own process writes it rank by rank from the replay's recordings, folded units' timings kept
  // once, so the trace never sits whole in memory nor travels back; not written on out of memory.
  std::string trace_path;

  bool isolate = true;  // run in a forked child (see above); false runs in this process, once
};

struct TaskTiming {
  int32_t rank = 0;
  TaskId task = 0;
  Stream stream = Stream::kCompute;
  double start_s = 0;
  double end_s = 0;
};

struct MemorySample {
  int32_t rank = 0;
  double time_s = 0;
  int64_t device_bytes = 0;
  int64_t host_bytes = 0;
};

struct RankStats {
  double end_s = 0;
  double compute_s = 0;       // compute stream busy
  double exposed_comm_s = 0;  // communication moving data while the compute stream is idle
  double offload_s = 0;       // copies to/from the host and host work, nothing else running
  double idle_s = 0;          // nothing running (pipeline bubble, waiting for peers), to end_s
  int64_t peak_device_bytes = 0;
  int64_t peak_host_bytes = 0;
  double model_flops = 0;     // matmul flops of forward and backward
  double hardware_flops = 0;  // plus recomputation
  // compute_s, exposed_comm_s and offload_s split by cost component (sim/cost_component.h).
  ComponentTimes component_s{};
};

struct LiveBuffer {
  std::string name;
  BufferRole role = BufferRole::kActivation;
  int64_t bytes = 0;
};

struct OomReport {
  int rank = -1;
  double time_s = 0;
  bool host = false;             // host memory of the rank's node, else the GPU's HBM
  std::string buffer;            // the allocation that did not fit
  int64_t requested_bytes = 0;
  int64_t in_use_bytes = 0;      // before it
  int64_t capacity_bytes = 0;
  std::vector<LiveBuffer> live;  // the rank's live buffers at that moment, largest first
};

struct SimResult {
  double iteration_time_s = 0;
  bool oom = false;
  OomReport oom_report;
  std::vector<RankStats> ranks;
  std::vector<TaskTiming> tasks;     // sorted by rank, then task id (record_tasks)
  std::vector<MemorySample> memory;  // sorted by rank, then time (record_memory)

  // Derived (finalize_metrics): per the scenario's global batch and sequence length.
  double tokens_per_s = 0;
  double model_tflops_per_gpu = 0;
  double hardware_tflops_per_gpu = 0;
  double mfu = 0;
  int64_t peak_memory_bytes = 0;
  int slowest_rank = 0;
  // The prediction interval of iteration_time_s (sim/prediction_interval.h; kIntervalCoverage),
  // from the slowest rank's component_s; [t, t] on out of memory.
  double iteration_time_low_s = 0, iteration_time_high_s = 0;
  // What the interval was made from: the GPU reference residuals, or a host calibration's own
  // evidence (sim/prediction_interval_calibrated.h; then its runs' spread half-width, negative
  // when not used, and the number of calibration runs).
  IntervalEvidence interval_evidence = IntervalEvidence::kReferenceResiduals;
  double interval_spread_half_width = -1;
  int interval_calibration_runs = 0;
  // A --state-probe prediction (sim/compute_cost_model.h): the ratios of the machine state probe
  // now to the calibration's that its communication, Alloc/Free and kernel costs were scaled by
  // (1 when the probe fell in a calibrated state: that state's costs, unscaled); 0: none.
  double state_communication_ratio = 0, state_memory_ratio = 0, state_compute_ratio = 0;
  // The calibrated machine state it took (traces/calibration/machine_states.h): 1-based, of how
  // many; 0 of 0 for any other prediction. state_matched: the probe fell in it.
  int calibrated_state = 0, calibrated_states = 0;
  bool state_matched = false;
  // Its costs were scaled to the probe (it fell in no calibrated state): its interval takes the
  // scaled predictions' residuals (sim/prediction_interval_calibrated.h).
  bool scaled_to_state() const { return state_communication_ratio > 0 && !state_matched; }

  // What the simulator did.
  uint64_t flows = 0;
  uint64_t simgrid_flows = 0;  // of `flows`, those SimGrid moved (not costed alone, not left out by the flow quotient)
  uint64_t collectives = 0;
  uint64_t closed_form_collectives = 0;
  uint64_t calibrated_collectives = 0;  // took their measured time (SimOptions::calibration)
  uint64_t events = 0;
  int programs_generated = 0;
  int fold = 1;             // ranks replayed per state (tensor-parallel or replica folding; 1: none; replica classes: the widest unit)
  bool fold_exact = true;   // folded lanes' flows all ended together (else simulate() reruns unfolded)
  // Not exact because of the lane quotient: a collective whose flows are not whole orbits of the
  // lanes' moves met other traffic (simulate() reruns without the lane quotient first).
  bool lane_quotient_parted = false;
  // SimOptions::approximate: lanes parted and the run was kept (the result is approximate).
  bool approximate = false;
  // Timing partings seen (an asymmetric op met other traffic, or a lane's flow did not end with
  // lane 0's), and the simulated time they lasted, summed: each from the parting to the end of the
  // phase of the op it touched (docs/sim.md "Approximate tier": the bound on the error).
  uint64_t parted_meetings = 0;
  double parted_window_s = 0;
  // A flow joined lanes of different classes under the flow quotient: not a timing parting, and
  // no approximation bound covers it (the approximate tier reruns it as the exact path does).
  bool fold_broken = false;
  // Grid folding (lanes not consecutive ranks): by rank, the rank its unit's recordings are kept
  // under (lane 0); empty otherwise (rank - rank % fold). Used in the simulation's own process only.
  std::vector<int32_t> lane0;
};

// Throws Error on bad input (a schedule that cannot run: mismatched collectives or p2p, a
// deadlock, a bad cluster). Out of memory is a result (oom, oom_report), not an exception.
SimResult simulate(const Schedule& schedule, const SimOptions& options = {});

}  // namespace tandem::sim
