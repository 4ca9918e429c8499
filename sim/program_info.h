// What the replay needs to know about one rank program before it runs: its tasks per stream, the
// time of each compute-like task, which tasks fuse, and a compact table of its buffers.
//
// Why a separate step: a program is analysed once and shared by every rank of its class
// (SimOptions::share_class_programs), so nothing here may depend on which rank runs it. The
// structural checks done here (ids, streams, dependency order, buffer names) are the replay's
// own: shared/schedule_validator checks the same offline, but it needs every rank's program and
// a reference run, so it is not on the simulation path (sized for test schedules).
#pragma once

#include <array>
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "shared/schedule.h"
#include "sim/compute_cost_model.h"
#include "sim/cost_component.h"

namespace tandem::sim {

struct ProgramInfo {
  Program program;
  std::array<std::vector<TaskId>, kStreamCount> streams;  // task ids in stream order
  std::vector<double> cost_s;        // compute, host work and device copies
  std::vector<double> dispatch_s;    // compute-stream kernels: host time to issue them (0: none)
  std::vector<uint8_t> fuse_next;    // the next task of this one's stream runs fused after it
  std::vector<Component> component;  // compute-like tasks: their cost component
  ComponentTimes compute_component_s{};  // cost_s of the compute stream's tasks, by component
  std::vector<uint32_t> task_buffer;  // Alloc/Free: index of the buffer in `program.buffers`
  std::vector<int64_t> device_bytes;  // by buffer index: bytes of an accounted device buffer, else 0
  double model_flops = 0, hardware_flops = 0;
  // A host calibration's Allocs and Frees (sim/host_memory_model.h): their own time is their
  // cost_s; the replay runs it on the compute stream with the kernel it is charged to (that kernel's
  // cost_s includes it), before the kernel, or after it for the Frees that follow the last kernel.
  // By kernel: its Alloc/Free tasks in program order. Empty without a host memory model.
  std::unordered_map<TaskId, std::vector<TaskId>> memory_ops_of;
  std::vector<uint8_t> memory_charged;  // by task: 1 for an Alloc/Free in memory_ops_of (empty: none)
  // A host calibration's time between tasks (ComputeCostModel::gap_s, the host driver's dispatch):
  // by task, the time the runtime spends before a calibrated kernel starts, a cost of its own that
  // cost_s adds to the kernel's (so that the kernel's timer covers both). The replay runs it on the
  // kernel's stream before the kernel (after the kernel's Allocs/Frees) and records the kernel
  // after it. Empty when no kernel has one.
  std::vector<double> gap_s;
  // Host-stream compute whose memory traffic is a flow on the node's host memory (the cluster's
  // host figures, uncalibrated: sim/host_adam_cost.h): by task, the bytes and the compute term
  // (the task ends when both are done). Never fused with its neighbours.
  struct HostFlow {
    int64_t bytes = 0;
    double compute_s = 0;
  };
  std::unordered_map<TaskId, HostFlow> host_flows;
};

// The recorded times of a kernel with Allocs/Frees charged to it (ProgramInfo::memory_ops_of) or a
// time between tasks (ProgramInfo::gap_s): [start, end] is the kernel's span with both; each
// Alloc/Free takes its cost_s from `start` on (or, after the kernel, right after it), in program
// order, then the gap passes with no task, and the kernel keeps the rest.
struct TimedTask {
  TaskId task;
  double start_s, end_s;
};
std::vector<TimedTask> split_memory_time(const ProgramInfo& info, TaskId kernel, double start_s, double end_s);

// Throws Error (bad input) when the program is malformed: an id that is not its index, no valid
// stream, a dependency on a later task, an Alloc/Free of a buffer the program does not have.
std::shared_ptr<ProgramInfo> analyse_program(Program program, const ComputeCostModel& costs);

// Compute and device-to-device copies: the tasks that run as exact timers and may fuse.
inline bool is_compute_like(const Task& t) {
  return std::holds_alternative<Compute>(t.op) ||
         (std::holds_alternative<Copy>(t.op) && std::get<Copy>(t.op).direction == CopyDirection::kD2D);
}

// "rank R task T", the way every replay error names a task.
inline std::string rank_task(int rank, TaskId t) {
  return "rank " + std::to_string(rank) + " task " + std::to_string(t);
}

}  // namespace tandem::sim
