// The seam between the runtime (which runs a rank's program: buffers, streams, dependencies,
// timing, memory accounting) and a driver (which owns the memory and runs each task's work). The
// runtime never knows whether it runs on the host (MPI + CPU kernels) or on a GPU (CUDA + NCCL):
// it asks the driver to start a task and later tests whether it has finished. A driver that runs
// a task synchronously returns kFinished. Every call says what the driver needs: the task (its id
// and stream) with its payload and buffer addresses, the dtype of a transfer; a driver infers
// nothing from addresses or byte counts.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "shared/schedule.h"

namespace tandem::exec {

class MarkovChain;
struct ExecOptions;

using Pending = int64_t;
inline constexpr Pending kFinished = -1;

// The task a driver call runs: its id in the rank's program (a driver that keeps its own times
// files them under it) and the schedule stream it runs on (a GPU driver's queue).
struct TaskRef {
  TaskId id = kNoId;
  Stream stream = Stream::kCompute;
};

struct TaskTimes {
  double start_s = -1, end_s = -1;
};

// What a compute task needs beyond its buffers.
struct StepContext {
  int step = 0;  // 0-based training step (the optimizer's step count is step + 1)
  int64_t global_batch = 0;
  const MarkovChain* data = nullptr;
  const ExecOptions* options = nullptr;
};

class Driver {
 public:
  virtual ~Driver() = default;
  virtual const char* name() const = 0;  // "host", "cuda": the trace's backend
  virtual std::string machine() const = 0;

  // Zero-filled memory of `bytes` at `placement`; released with the same bytes and placement.
  virtual void* allocate(int64_t bytes, Placement placement) = 0;
  virtual void release(void* p, int64_t bytes, Placement placement) = 0;
  // Synchronous transfers of `count` fp32 values between the runtime's host memory and a buffer
  // stored as `dtype` at `placement` (initial values, the loss); the driver converts (bf16 rounds
  // to nearest even) or throws Error for a dtype it does not store.
  virtual void write(void* dst, DType dtype, Placement placement, const float* src, int64_t count) = 0;
  virtual void read(float* dst, const void* src, DType dtype, Placement placement, int64_t count) = 0;

  // Around each step the runtime runs (Runtime::run_step): a driver that times its work itself
  // (on a device) replaces the runtime's host times of the tasks it ran, indexed by task id.
  virtual void begin_step() {}
  virtual void end_step(std::vector<TaskTimes>& /*times*/) {}

  // Start a task's work. Buffers are resolved to addresses in the order the task names them.
  virtual Pending compute(const TaskRef& task, const Compute& c, const std::vector<void*>& in,
                          const std::vector<void*>& out, const StepContext& ctx) = 0;
  virtual Pending collective(const TaskRef& task, const Collective& c, void* in, void* out) = 0;
  virtual Pending p2p(const TaskRef& task, const SendRecv& m, void* buffer) = 0;
  virtual Pending copy(const TaskRef& task, const Copy& c, void* src, void* dst) = 0;
  // True once the started work has finished (the handle is then spent).
  virtual bool test(Pending p) = 0;
};

}  // namespace tandem::exec
