// What `tandem sim` (and each point of `tandem sweep`) will need in memory, estimated before
// anything large is allocated, for shared/resource_limit.h's check_memory_estimate. The counts it
// rests on (SimWork) serve the wall-time estimate too (sim/sim_time_estimate.h).
#pragma once

#include <cstdint>
#include <string>

#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::sim {

// What a simulation will hold and replay, counted from one program per rank class.
struct SimWork {
  int64_t world = 0;         // ranks (GPUs) on the platform
  int fold = 1;              // ranks replayed as one unit: the tp, replica or grid folding expected
  int64_t units = 0;         // replayed states: world / fold
  // The flow or lane quotient expected: a symmetric op's SimGrid flows are 1/flow_quotient of its
  // flows (1: none).
  int flow_quotient = 1;
  int64_t class_tasks = 0;   // tasks of the class programs, each generated once
  int64_t max_tasks = 0;     // tasks of the largest program
  int64_t max_buffers = 0;   // buffers of the largest program
  int64_t rank_tasks = 0;    // tasks of every rank's program
  int64_t rank_entries = 0;  // tasks plus Alloc/Free samples of every rank's program
  // Sum over the collectives every rank takes part in, of groups that span nodes, of the group's
  // size n times the lanes whose flows one launch carries (1 unfolded), divided by flow_quotient^2:
  // unfolded, over each collective's group instances, n^2. The replay's cost of a launch grows
  // about as the square of the SimGrid flows in flight, (lanes x n / q)^2, and a group's instances
  // make instances / lanes launches (measured, sim/sim_time_estimate.cc). The estimate assumes
  // plans symmetric under the fold's moves: an asymmetric one (NCCL's tree over the replicas,
  // docs/sim.md "Lane quotient") keeps more flows. Where the tuner picks that tree under grid
  // folding with pipeline stages the lanes part and the exact path runs again with one state per
  // stage and class of replicas (docs/sim.md "Replica classes"; with the tp lanes alone when
  // SimOptions::fold_replica_classes is off): the counts are that run's (without --approximate).
  double collective_square = 0;
  int64_t replayed_tasks() const { return rank_tasks / fold; }
};

// Generates each rank class's program once (one at a time) to count its tasks and allocations;
// Error (bad input) if a count overflows 64 bits.
SimWork count_sim_work(const Schedule& schedule, const SimOptions& options);

struct MemoryEstimate {
  int64_t bytes = 0;
  std::string how;  // what it counts, for the refusal message
};

// `tracing`: --trace or --timeline (the replay records every task); `timeline`: the parent reads
// the whole trace back to write a Chrome JSON timeline.
MemoryEstimate estimate_memory(const SimWork& work, bool tracing, bool timeline);
MemoryEstimate estimate_memory(const Schedule& schedule, const SimOptions& options, bool timeline);

}  // namespace tandem::sim
