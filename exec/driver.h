// The seam between the runtime (which runs a rank's program: buffers, streams, dependencies,
// timing, memory accounting) and a driver (which owns the memory and runs each task's work). The
// runtime never knows whether it runs on the host (MPI + CPU kernels) or on a GPU (CUDA + NCCL):
// it asks the driver to start a task and later tests whether it has finished. A driver that runs
// a task synchronously returns kFinished.
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
  // Synchronous transfers between the runtime's host memory and a buffer (initialisation, loss).
  virtual void write(void* dst, const void* src, int64_t bytes, Placement placement) = 0;
  virtual void read(void* dst, const void* src, int64_t bytes, Placement placement) = 0;

  // Start a task's work. Buffers are resolved to addresses in the order the task names them.
  virtual Pending compute(const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out,
                          const StepContext& ctx) = 0;
  virtual Pending collective(const Collective& c, void* in, void* out) = 0;
  virtual Pending p2p(const SendRecv& m, void* buffer) = 0;
  virtual Pending copy(const Copy& c, void* src, void* dst) = 0;
  // True once the started work has finished (the handle is then spent).
  virtual bool test(Pending p) = 0;
};

}  // namespace tandem::exec
