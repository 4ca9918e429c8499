// The runtime of the real backend: one rank's program run task by task with real data.
//
// It allocates the rank's buffers (persistent ones once, before the first step, with their
// initial values from exec/param_init.h), then runs a step as a single-threaded event loop: each
// stream runs its tasks in program order, and a task starts when its stream's previous task and
// all its deps have finished (shared/schedule.h; the same rules as shared/reference_executor.h).
// Alloc, Free and synchronous driver work finish at once; asynchronous work (MPI requests, CUDA
// streams) is started and polled. It records the start and end of every task (steady clock,
// seconds from the step's start, StepResult.origin_s; a driver that times its work on a device
// replaces them through Driver::end_step), counts live device and host bytes (roots only, as
// shared/memory_timeline.h does) and keeps the value of the buffer "loss" at its Free.
#pragma once

#include <atomic>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "exec/driver.h"
#include "exec/exec_options.h"
#include "exec/synthetic_data.h"
#include "shared/error.h"
#include "shared/schedule.h"

namespace tandem::exec {

struct MemorySample {
  double time_s = 0;
  int64_t device_bytes = 0, host_bytes = 0;
};

struct StepResult {
  std::vector<TaskTimes> tasks;  // by task id
  std::vector<MemorySample> memory;  // the step's start, then after each Alloc and Free
  double wall_s = 0;
  // The step's start, which the times above count from: seconds of steady_clock (CLOCK_MONOTONIC,
  // one clock for every process of the machine), so that rank 0 can put every rank's times on one
  // origin (exec/step_origin.h). A CUDA driver's device times count from its step-start event,
  // recorded right before it (Driver::begin_step).
  double origin_s = 0;
  std::optional<double> loss_sum;  // the "loss" buffer's value at its Free, on ranks that have it
};

// The watchdog's Error (exit code 4): its message names the rank's wait; waits_on() lists the ranks
// that wait needs (exec/stall_verdict.h), for the job to name the rank that stopped.
class StallError : public Error {
 public:
  StallError(const std::string& message, std::vector<int> waits_on)
      : Error(message, ErrorKind::kStalled), waits_on_(std::move(waits_on)) {}
  const std::vector<int>& waits_on() const { return waits_on_; }

 private:
  std::vector<int> waits_on_;
};

class Runtime {
 public:
  // Checks that the driver can run the program (Error otherwise) and sets up the buffers.
  Runtime(const Schedule& schedule, int rank, Driver& driver, const ExecOptions& options);
  ~Runtime();
  Runtime(const Runtime&) = delete;
  Runtime& operator=(const Runtime&) = delete;

  const Program& program() const { return program_; }
  // Runs training step `step` (0-based). Throws StallError naming the task it waits on and the
  // ranks its started work needs when no task finishes for options.timeout_s.
  StepResult run_step(int step);

  int64_t peak_device_bytes() const { return peak_device_; }
  int64_t peak_host_bytes() const { return peak_host_; }
  int64_t device_bytes() const { return device_; }
  // Number of tasks finished so far, for a watchdog on another thread.
  const std::atomic<uint64_t>& progress() const { return progress_; }

 private:
  void* address(BufferId id) const;
  void allocate(BufferId root);
  void release(BufferId root);
  std::vector<void*> addresses(const std::vector<BufferId>& ids) const;
  void initialise();
  std::string describe(TaskId id) const;
  // The other ranks task `id` needs: a message's peer, a collective's other members.
  std::vector<int> peers_of(TaskId id) const;

  const Schedule& schedule_;
  const int rank_;
  Driver& driver_;
  ExecOptions options_;
  Program program_;
  MarkovChain chain_;
  std::vector<std::vector<TaskId>> streams_;
  std::vector<TaskId> memory_ops_;  // Alloc and Free tasks off the pipeline streams, in program order
  std::vector<BufferId> root_;           // by buffer: its root
  std::vector<int64_t> root_offset_;     // by buffer: byte offset in its root
  std::vector<void*> memory_;            // by root: address, or null while not allocated
  std::vector<bool> persistent_;         // by root
  BufferId loss_ = kNoId;
  int64_t device_ = 0, host_ = 0, peak_device_ = 0, peak_host_ = 0;
  std::atomic<uint64_t> progress_{0};
};

}  // namespace tandem::exec
