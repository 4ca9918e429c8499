// The CUDA driver: one process per GPU (rank r uses device r % device count), the rank's program
// run by the unchanged runtime (exec/runtime.h) with device memory from a caching allocator,
// kernels from kernels/cuda (fp32 and bf16 storage; cuBLAS GEMMs) and communication through NCCL.
//
// Streams and completion. One CUDA stream (cudaStreamNonBlocking) per schedule stream. A started
// task is its work enqueued on its stream between two events; its handle is polled with
// cudaEventQuery on the end event. The runtime starts a task only when its stream predecessor and
// its dependencies have *finished* (exec/runtime.cc), so no cross-stream cudaStreamWaitEvent is
// needed and a Free never returns memory that queued work still uses; the price is a host
// round-trip (a launch, a few microseconds) between dependent tasks, instead of the device
// running ahead. Chosen because it keeps the runtime, its memory order and its watchdog exactly
// as the host driver uses them.
//
// Which stream: the one the runtime names with the task (TaskRef::stream).
//
// Memory. Placement::kDevice: CachingAllocator over cudaMalloc, zero-filled on a memory stream
// that is synchronised before the address is returned. kHost (and kNvme, which this driver keeps
// in host memory too): pinned memory (cudaHostAlloc), so that H2D/D2H copies are asynchronous.
// The allocator counts the bytes the runtime asks for (roots only), the runtime's and the
// planner's unit.
//
// Timing. begin_step() records a step-start event; every task run on a stream records start and
// end events under its task id; end_step() replaces the runtime's host times of those tasks by
// device times (cudaEventElapsedTime from the step-start event). The runtime calls both around
// each step (Driver::begin_step, end_step). Alloc, Free and host work (offloaded Adam) keep the
// runtime's host times (steady clock from the step's start, a few microseconds apart from the
// device's origin).
//
// Initial values arrive as floats with the buffer's dtype (Driver::write): a bf16 buffer's are
// rounded to bf16 on the host (exec/cuda/bf16_host.h), and read() widens bf16 back to floats.
#pragma once

#include <memory>
#include <string>

#include "exec/driver.h"
#include "shared/scenario.h"
#include "shared/schedule.h"

namespace tandem::exec {

// Error (exit code 2) when the CUDA driver cannot run the scenario: fp16 storage (the kernels
// have fp32 and bf16 overloads) or dropout > 0 (no dropout kernel).
void check_cuda_scenario(const Scenario& scenario);

// CUDA devices visible to this process; 0 when there is none or no CUDA driver (never throws).
int cuda_device_count();

class CudaDriver : public Driver {
 public:
  // Selects device rank % count, creates the streams, the cuBLAS handle and the NCCL
  // communicators (exec/cuda/nccl_comms.h; collective over the ranks, needs MPI unless the
  // program has no collective over more than one rank and no message). Error (exit code 5) when
  // there is no CUDA device.
  CudaDriver(const Schedule& schedule, int rank);
  ~CudaDriver() override;
  CudaDriver(const CudaDriver&) = delete;
  CudaDriver& operator=(const CudaDriver&) = delete;

  const char* name() const override { return "cuda"; }
  std::string machine() const override;
  void* allocate(int64_t bytes, Placement placement) override;
  void release(void* p, int64_t bytes, Placement placement) override;
  void write(void* dst, DType dtype, Placement placement, const float* src, int64_t count) override;
  void read(float* dst, const void* src, DType dtype, Placement placement, int64_t count) override;
  void begin_step() override;
  void end_step(std::vector<TaskTimes>& times) override;
  Pending compute(const TaskRef& task, const Compute& c, const std::vector<void*>& in,
                  const std::vector<void*>& out, const StepContext& ctx) override;
  Pending collective(const TaskRef& task, const Collective& c, void* in, void* out) override;
  Pending p2p(const TaskRef& task, const SendRecv& m, void* buffer) override;
  Pending copy(const TaskRef& task, const Copy& c, void* src, void* dst) override;
  bool test(Pending p) override;

  int device() const;
  // Device bytes requested by live allocations, their peak, and what the allocator holds
  // from cudaMalloc (its cache included).
  int64_t live_device_bytes() const;
  int64_t peak_device_bytes() const;
  int64_t reserved_device_bytes() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace tandem::exec
