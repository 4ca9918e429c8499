// Kernel -> kernels/cuda: runs one Compute task of the schedule on a CUDA stream, the CUDA
// counterpart of HostDriver::compute (exec/host_driver.cc) for all 24 kernels.
//
// Storage: Compute::dtype kFp32 uses the float overloads, kBf16 the __nv_bfloat16 ones; the
// statistics the kernel contracts keep in float (norm mean/rstd, attention lse, cross-entropy
// max/sum/target/loss, Adam's master, m, v) stay float. A GEMM's C takes the dtype of its output
// buffer (bf16, or float for a bf16 x bf16 -> fp32 product). kFp16 and dropout are rejected with
// an Error. Every operand's buffer dtype is checked against what the kernel reads.
//
// Work that is not a device kernel:
//  - kData: the Markov-chain samples are made on the host and copied to the device on the stream.
//  - kCrossEntropyLoss: per-token losses on the device, then (synchronising the stream) summed in
//    double on the host and added to the one-float loss buffer, as the host driver sums them.
//  - kAdam whose master lives on the host (optimizer offload, Stream::kHost): the CPU AdamW on the
//    pinned host buffers, bf16 gradients widened and the parameter rounded on the host. The
//    runtime starts it only after its dependencies (the D2H copy of the gradient) have finished
//    on the device, so it needs no further synchronisation.
#pragma once

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <vector>

#include "exec/driver.h"
#include "shared/schedule.h"

namespace tandem::exec {

// A device buffer that grows on demand, for work that needs a temporary (the cross-entropy's
// per-token losses, an in-place all-to-all). One per stream: the runtime runs one task at a time
// on a stream, so the previous user has finished when the next asks.
class DeviceScratch {
 public:
  DeviceScratch() = default;
  ~DeviceScratch();
  DeviceScratch(const DeviceScratch&) = delete;
  DeviceScratch& operator=(const DeviceScratch&) = delete;
  void* get(int64_t bytes);

 private:
  void* p_ = nullptr;
  int64_t bytes_ = 0;
};

struct DispatchContext {
  cudaStream_t stream = nullptr;
  cublasHandle_t cublas = nullptr;
  const Program* program = nullptr;  // buffer dtypes and placements
  DeviceScratch* scratch = nullptr;  // the stream's scratch
};

// Enqueues the task's work on dc.stream (or runs it on the host); throws Error on a bad task or a
// failed call.
void run_compute(const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out,
                 const StepContext& ctx, const DispatchContext& dc);

}  // namespace tandem::exec
