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
// Which stream: Driver::compute/collective/p2p/copy do not name the task, so begin_step() indexes
// the runtime's program by the address of each task's payload (the runtime passes the payload
// inside Runtime::program() by reference) and the driver looks the task up there; a payload it
// does not know (a driver used without begin_step) goes to the stream its kind implies (compute,
// comm, send/recv, h2d/d2h).
//
// Memory. Placement::kDevice: CachingAllocator over cudaMalloc, zero-filled on a memory stream
// that is synchronised before the address is returned. kHost (and kNvme, which this driver keeps
// in host memory too): pinned memory (cudaHostAlloc), so that H2D/D2H copies are asynchronous.
// The allocator counts the bytes the runtime asks for (roots only), the runtime's and the
// planner's unit.
//
// Timing. begin_step() records a step-start event; every task run on a stream records start and
// end events; end_step() replaces the runtime's host times of those tasks by device times
// (cudaEventElapsedTime from the step-start event). Alloc, Free and host work (offloaded Adam)
// keep the runtime's host times (steady clock from the step's start, a few microseconds apart
// from the device's origin).
//
// bf16 initial values: the runtime writes parameters as floats (ParamInit) with bytes = 4 x
// elements; a write of exactly twice the bytes of the allocation at dst is taken as floats for a
// bf16 buffer and rounded to bf16 on the host (exec/cuda/bf16_host.h). A plain write never
// exceeds its allocation, so the two cannot be confused.
#pragma once

#include <memory>
#include <string>

#include "exec/driver.h"
#include "exec/runtime.h"
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
  void write(void* dst, const void* src, int64_t bytes, Placement placement) override;
  void read(void* dst, const void* src, int64_t bytes, Placement placement) override;
  Pending compute(const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out,
                  const StepContext& ctx) override;
  Pending collective(const Collective& c, void* in, void* out) override;
  Pending p2p(const SendRecv& m, void* buffer) override;
  Pending copy(const Copy& c, void* src, void* dst) override;
  bool test(Pending p) override;

  // Around each Runtime::run_step: `program` is Runtime::program() (see "Which stream").
  void begin_step(const Program& program);
  void end_step(StepResult& result);

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
