#include "exec/cuda/cuda_driver.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <nccl.h>

#include <array>
#include <cstdio>
#include <cstring>
#include <unordered_map>
#include <vector>

#include "exec/cuda/bf16_host.h"
#include "exec/cuda/caching_allocator.h"
#include "exec/cuda/cuda_check.h"
#include "exec/cuda/cuda_dispatch.h"
#include "exec/cuda/nccl_comms.h"

namespace tandem::exec {
namespace {

class CudaBlockSource : public BlockSource {
 public:
  void* obtain(int64_t bytes) override {
    void* p = nullptr;
    const cudaError_t rc = cudaMalloc(&p, size_t(bytes));
    if (rc == cudaErrorMemoryAllocation) {
      (void)cudaGetLastError();  // clear the sticky-free error so later calls do not report it
      return nullptr;
    }
    check_cuda(rc, "cudaMalloc");
    return p;
  }
  void give_back(void* p, int64_t) override {
    if (cudaFree(p) != cudaSuccess) std::fprintf(stderr, "tandem: cudaFree failed\n");
  }
};

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::kFp32: return ncclFloat32;
    case DType::kFp16: return ncclFloat16;
    case DType::kBf16: return ncclBfloat16;
    case DType::kInt32: return ncclInt32;
    case DType::kUint8: return ncclUint8;
    case DType::kFp8:
    case DType::kFp8E4M3:
    case DType::kFp8E5M2: break;  // refused by check_cuda_scenario
  }
  throw Error("exec: no NCCL type for this dtype", ErrorKind::kInternal);
}

bool overlaps(const void* a, int64_t an, const void* b, int64_t bn) {
  const char *x = static_cast<const char*>(a), *y = static_cast<const char*>(b);
  return x < y + bn && y < x + an;
}

char* C(void* p) { return static_cast<char*>(p); }

}  // namespace

void check_cuda_scenario(const Scenario& sc) {
  if (sc.strategy.dtype == DType::kFp8)
    throw Error(sc.origin + ": strategy.dtype: fp8 is not run by the CUDA driver: it has no FP8 GEMMs (cuBLASLt "
                "e4m3/e5m2 with per-tensor scales) nor Transformer Engine's amax and scale bookkeeping yet; "
                "simulate it with tandem sim, or run it here with --set strategy.dtype=bf16");
  if (sc.strategy.dtype != DType::kFp32 && sc.strategy.dtype != DType::kBf16)
    throw Error(sc.origin + ": strategy.dtype: the CUDA driver runs fp32 and bf16, got " +
                std::string(to_string(sc.strategy.dtype)) + " (use --set strategy.dtype=bf16)");
  if (sc.model.dropout > 0)
    throw Error(sc.origin + ": model.dropout: the CUDA driver has no dropout kernel, got " +
                std::to_string(sc.model.dropout) + " (use --set model.dropout=0)");
  if (sc.grad_dtype() != sc.strategy.dtype)
    throw Error(sc.origin + ": software.grad_reduce_dtype: the CUDA driver's weight-gradient GEMMs write gradients "
                "of the training dtype, not fp32 main_grad (" + sc.software.preset + " reduces " +
                to_string(sc.strategy.dtype) + " training in fp32; use --set software.grad_reduce_dtype=param)");
  // Its Adam runs an fp32 master with fp32 moments, or bf16 moments with no master (the parameter
  // updated in place, kernels/cuda/adamw.h); not int16 remainders, nor bf16 moments beside a master.
  const bool fp32_state = sc.optimizer_state_dtype() == DType::kFp32 && sc.master_params() == MasterParams::kFp32;
  const bool bf16_state = sc.strategy.dtype == DType::kBf16 && sc.optimizer_state_dtype() == DType::kBf16 &&
                          sc.master_params() == MasterParams::kNone;
  if (sc.strategy.dtype != DType::kFp32 && !fp32_state && !bf16_state)
    throw Error(sc.origin + ": software.optimizer_state_dtype / master_params: the CUDA driver's Adam keeps an fp32 "
                "master and fp32 moments, or bf16 moments and no master; got " +
                to_string(sc.software.optimizer_state_dtype) + " moments and " + to_string(sc.software.master_params) +
                " master params (use --set software.optimizer_state_dtype=fp32 --set software.master_params=fp32, "
                "or software.optimizer_state_dtype=param --set software.master_params=none)");
}

int cuda_device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    (void)cudaGetLastError();
    return 0;
  }
  return n;
}

// A started piece of stream work: its events, and the communicator to ask for asynchronous
// errors while it is not finished.
struct Work {
  TaskId task = kNoId;
  cudaEvent_t start = nullptr, end = nullptr;
  ncclComm_t comm = nullptr;
  bool done = false;
};

struct CudaDriver::Impl {
  const Schedule& schedule;
  int rank;
  int device = 0;
  Program program;  // this rank's program: buffer dtypes and placements, p2p channels
  cudaDeviceProp props{};
  std::array<cudaStream_t, kStreamCount> streams{};
  cudaStream_t memory_stream = nullptr;  // zero-fill, write, read
  cublasHandle_t cublas = nullptr;
  CudaBlockSource source;
  std::unique_ptr<CachingAllocator> allocator;
  std::unordered_map<void*, int64_t> pinned;  // host allocations: requested bytes
  std::unique_ptr<NcclComms> comms;
  std::array<DeviceScratch, kStreamCount> scratch;
  std::vector<cudaEvent_t> event_pool;
  std::vector<Work> log;  // by Pending
  std::vector<Pending> free_slots;  // reusable log entries when no step is being timed
  cudaEvent_t step_start = nullptr;
  bool timing = false;

  Impl(const Schedule& s, int r) : schedule(s), rank(r) {}

  cudaEvent_t event() {
    if (!event_pool.empty()) {
      cudaEvent_t e = event_pool.back();
      event_pool.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    check_cuda(cudaEventCreate(&e), "cudaEventCreate");
    return e;
  }

  void recycle(Work& w) {
    if (w.start) event_pool.push_back(w.start);
    if (w.end) event_pool.push_back(w.end);
    w = Work();
  }

  cudaStream_t stream(const TaskRef& task) const { return streams[size_t(task.stream)]; }

  // Opens a work item: its start event recorded on the stream.
  Pending begin(const TaskRef& task, cudaStream_t s, ncclComm_t comm) {
    Work w;
    w.task = task.id;
    w.comm = comm;
    w.start = event();
    w.end = event();
    check_cuda(cudaEventRecord(w.start, s), "cudaEventRecord (task start)");
    if (!free_slots.empty() && !timing) {
      const Pending p = free_slots.back();
      free_slots.pop_back();
      log[size_t(p)] = w;
      return p;
    }
    log.push_back(w);
    return Pending(log.size() - 1);
  }

  Pending finish(Pending p, cudaStream_t s) {
    check_cuda(cudaEventRecord(log[size_t(p)].end, s), "cudaEventRecord (task end)");
    return p;
  }

  // Synchronous copy between the runtime's host memory and a buffer at `placement`.
  void transfer(void* dst, const void* src, size_t bytes, Placement placement, cudaMemcpyKind kind, const char* what) {
    if (placement != Placement::kDevice) {
      std::memcpy(dst, src, bytes);
      return;
    }
    check_cuda(cudaMemcpyAsync(dst, src, bytes, kind, memory_stream), what);
    check_cuda(cudaStreamSynchronize(memory_stream), what);
  }
};

CudaDriver::CudaDriver(const Schedule& schedule, int rank) : impl_(std::make_unique<Impl>(schedule, rank)) {
  Impl& m = *impl_;
  int count = 0;
  const cudaError_t rc = cudaGetDeviceCount(&count);
  if (rc != cudaSuccess || count == 0)
    throw Error("exec: rank " + std::to_string(rank) + ": no CUDA device: " +
                    (rc != cudaSuccess ? std::string(cudaGetErrorName(rc)) + ": " + cudaGetErrorString(rc)
                                       : std::string("cudaGetDeviceCount found 0")),
                ErrorKind::kFault);
  m.device = rank % count;
  check_cuda(cudaSetDevice(m.device), "cudaSetDevice");
  check_cuda(cudaGetDeviceProperties(&m.props, m.device), "cudaGetDeviceProperties");
  for (cudaStream_t& s : m.streams) check_cuda(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cuda(cudaStreamCreateWithFlags(&m.memory_stream, cudaStreamNonBlocking), "cudaStreamCreate");
  check_cublas(cublasCreate(&m.cublas), "cublasCreate");
  check_cuda(cudaEventCreate(&m.step_start), "cudaEventCreate");
  m.allocator = std::make_unique<CachingAllocator>(m.source);
  m.program = schedule.program(rank);
  m.comms = std::make_unique<NcclComms>(schedule, m.program, rank);
}

CudaDriver::~CudaDriver() {
  Impl& m = *impl_;
  if (cudaDeviceSynchronize() != cudaSuccess) std::fprintf(stderr, "tandem: cudaDeviceSynchronize failed\n");
  m.comms.reset();
  for (Work& w : m.log) m.recycle(w);
  for (cudaEvent_t e : m.event_pool) cudaEventDestroy(e);
  if (m.step_start) cudaEventDestroy(m.step_start);
  for (auto& [p, bytes] : m.pinned) cudaFreeHost(p);
  m.allocator.reset();
  if (m.cublas) cublasDestroy(m.cublas);
  for (cudaStream_t s : m.streams)
    if (s) cudaStreamDestroy(s);
  if (m.memory_stream) cudaStreamDestroy(m.memory_stream);
}

std::string CudaDriver::machine() const {
  int rt = 0, nccl = 0;
  cudaRuntimeGetVersion(&rt);
  ncclGetVersion(&nccl);
  return std::string(impl_->props.name) + " (CUDA runtime " + std::to_string(rt / 1000) + "." +
         std::to_string(rt % 1000 / 10) + ", NCCL " + std::to_string(nccl) + ", cuBLAS)";
}

int CudaDriver::device() const { return impl_->device; }
int64_t CudaDriver::live_device_bytes() const { return impl_->allocator->live_bytes(); }
int64_t CudaDriver::peak_device_bytes() const { return impl_->allocator->peak_bytes(); }
int64_t CudaDriver::reserved_device_bytes() const { return impl_->allocator->reserved_bytes(); }

void* CudaDriver::allocate(int64_t bytes, Placement placement) {
  Impl& m = *impl_;
  if (placement == Placement::kDevice) {
    void* p = m.allocator->allocate(bytes);
    if (bytes > 0) {
      check_cuda(cudaMemsetAsync(p, 0, size_t(bytes), m.memory_stream), "cudaMemsetAsync (zero-fill)");
      check_cuda(cudaStreamSynchronize(m.memory_stream), "cudaStreamSynchronize (zero-fill)");
    }
    return p;
  }
  void* p = nullptr;
  const size_t n = size_t(bytes > 0 ? bytes : 1);
  const cudaError_t rc = cudaHostAlloc(&p, n, cudaHostAllocDefault);
  if (rc == cudaErrorMemoryAllocation) {
    (void)cudaGetLastError();
    throw Error("exec: out of pinned host memory allocating " + std::to_string(bytes) + " bytes", ErrorKind::kOutOfMemory);
  }
  check_cuda(rc, "cudaHostAlloc");
  std::memset(p, 0, n);
  m.pinned[p] = bytes;
  return p;
}

void CudaDriver::release(void* p, int64_t, Placement placement) {
  Impl& m = *impl_;
  if (placement == Placement::kDevice) {
    m.allocator->release(p);
    return;
  }
  if (m.pinned.erase(p) == 0) throw Error("exec: release of host memory the CUDA driver did not allocate", ErrorKind::kInternal);
  check_cuda(cudaFreeHost(p), "cudaFreeHost");
}

void CudaDriver::write(void* dst, DType dtype, Placement placement, const float* src, int64_t count) {
  Impl& m = *impl_;
  if (dtype == DType::kFp32) {
    m.transfer(dst, src, size_t(count) * 4, placement, cudaMemcpyHostToDevice, "cudaMemcpyAsync (write)");
    return;
  }
  if (dtype != DType::kBf16)
    throw Error(std::string("exec: the CUDA driver writes fp32 and bf16 buffers, got ") + to_string(dtype),
                ErrorKind::kInternal);
  std::vector<uint16_t> narrowed(static_cast<size_t>(count));
  for (size_t i = 0; i < narrowed.size(); ++i) narrowed[i] = float_to_bf16_bits(src[i]);
  m.transfer(dst, narrowed.data(), narrowed.size() * 2, placement, cudaMemcpyHostToDevice, "cudaMemcpyAsync (write)");
}

void CudaDriver::read(float* dst, const void* src, DType dtype, Placement placement, int64_t count) {
  Impl& m = *impl_;
  if (dtype == DType::kFp32) {
    m.transfer(dst, src, size_t(count) * 4, placement, cudaMemcpyDeviceToHost, "cudaMemcpyAsync (read)");
    return;
  }
  if (dtype != DType::kBf16)
    throw Error(std::string("exec: the CUDA driver reads fp32 and bf16 buffers, got ") + to_string(dtype),
                ErrorKind::kInternal);
  std::vector<uint16_t> narrow(static_cast<size_t>(count));
  m.transfer(narrow.data(), src, narrow.size() * 2, placement, cudaMemcpyDeviceToHost, "cudaMemcpyAsync (read)");
  for (size_t i = 0; i < narrow.size(); ++i) dst[i] = bf16_bits_to_float(narrow[i]);
}

Pending CudaDriver::compute(const TaskRef& task, const Compute& c, const std::vector<void*>& in,
                            const std::vector<void*>& out, const StepContext& ctx) {
  Impl& m = *impl_;
  DispatchContext dc;
  dc.stream = m.stream(task);
  dc.cublas = m.cublas;
  dc.program = &m.program;
  dc.scratch = &m.scratch[size_t(task.stream)];
  // Offloaded Adam runs on the CPU, synchronously: its dependencies have finished on the device.
  if (c.kernel == Kernel::kAdam && !c.outputs.empty() &&
      m.program.buffers.at(c.outputs[0]).placement != Placement::kDevice) {
    run_compute(c, in, out, ctx, dc);
    return kFinished;
  }
  const Pending p = m.begin(task, dc.stream, nullptr);
  run_compute(c, in, out, ctx, dc);
  return m.finish(p, dc.stream);
}

Pending CudaDriver::collective(const TaskRef& task, const Collective& c, void* in, void* out) {
  Impl& m = *impl_;
  cudaStream_t s = m.stream(task);
  const int size = m.comms->group_size(c.group);
  const int me = m.comms->index_in_group(c.group);
  if (me < 0)
    throw Error("exec: rank " + std::to_string(m.rank) + " is not in group " + std::to_string(c.group), ErrorKind::kInternal);
  if (size == 1) {  // every collective of one member leaves its input as its output
    const Pending p = m.begin(task, s, nullptr);
    if (in != out)
      check_cuda(cudaMemcpyAsync(out, in, size_t(c.bytes), cudaMemcpyDeviceToDevice, s),
                 "cudaMemcpyAsync (one-rank collective)");
    return m.finish(p, s);
  }
  ncclComm_t comm = m.comms->group(c.group);
  const int64_t e = dtype_bytes(c.dtype);
  const ncclDataType_t type = nccl_type(c.dtype);
  const ncclRedOp_t red = c.reduce == ReduceOp::kMax ? ncclMax : ncclSum;
  const size_t count = size_t(c.bytes / e), chunk = count / size_t(size);
  const Pending p = m.begin(task, s, comm);
  switch (c.op) {
    case CollectiveOp::kAllReduce:
      check_nccl(ncclAllReduce(in, out, count, type, red, comm, s), "ncclAllReduce", comm);
      break;
    case CollectiveOp::kAllGather: {
      // In place when the input is the rank's slot of the output (NCCL's and MPI's rule).
      if (in != C(out) + me * int64_t(chunk) * e && overlaps(in, int64_t(chunk) * e, out, c.bytes))
        throw Error("exec: all-gather input overlaps its output off the rank's slot", ErrorKind::kInternal);
      check_nccl(ncclAllGather(in, out, chunk, type, comm, s), "ncclAllGather", comm);
      break;
    }
    case CollectiveOp::kReduceScatter: {
      // NCCL allows the output to be the rank's slot of the input (ZeRO's gradient shard).
      if (out != C(in) + me * int64_t(chunk) * e && overlaps(out, int64_t(chunk) * e, in, c.bytes))
        throw Error("exec: reduce-scatter output overlaps its input off the rank's slot", ErrorKind::kInternal);
      check_nccl(ncclReduceScatter(in, out, chunk, type, red, comm, s), "ncclReduceScatter", comm);
      break;
    }
    case CollectiveOp::kAllToAll: {
      const void* send = in;
      if (overlaps(in, c.bytes, out, c.bytes)) {  // in place: send from a copy
        void* tmp = m.scratch[size_t(task.stream)].get(c.bytes);
        check_cuda(cudaMemcpyAsync(tmp, in, size_t(c.bytes), cudaMemcpyDeviceToDevice, s),
                   "cudaMemcpyAsync (all-to-all input)");
        send = tmp;
      }
      const size_t step = chunk * size_t(e);
      check_nccl(ncclGroupStart(), "ncclGroupStart");
      for (int r = 0; r < size; ++r) {
        check_nccl(ncclSend(static_cast<const char*>(send) + size_t(r) * step, chunk, type, r, comm, s),
                   "ncclSend (all-to-all)", comm);
        check_nccl(ncclRecv(C(out) + size_t(r) * step, chunk, type, r, comm, s), "ncclRecv (all-to-all)", comm);
      }
      check_nccl(ncclGroupEnd(), "ncclGroupEnd (all-to-all)", comm);
      break;
    }
    case CollectiveOp::kBroadcast:
      check_nccl(ncclBroadcast(in, out, count, type, c.root, comm, s), "ncclBroadcast", comm);
      break;
    case CollectiveOp::kReduce:
      check_nccl(ncclReduce(in, out, count, type, red, c.root, comm, s), "ncclReduce", comm);
      break;
  }
  return m.finish(p, s);
}

Pending CudaDriver::p2p(const TaskRef& task, const SendRecv& msg, void* buffer) {
  Impl& m = *impl_;
  cudaStream_t s = m.stream(task);
  const int from = msg.is_send ? m.rank : msg.peer, to = msg.is_send ? msg.peer : m.rank;
  ncclComm_t comm = m.comms->channel(from, to, msg.tag);
  const int peer = m.rank == from ? 1 : 0;  // ranks in a channel: sender 0, receiver 1
  const Pending p = m.begin(task, s, comm);
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  if (msg.is_send)
    check_nccl(ncclSend(buffer, size_t(msg.bytes), ncclUint8, peer, comm, s), "ncclSend", comm);
  else
    check_nccl(ncclRecv(buffer, size_t(msg.bytes), ncclUint8, peer, comm, s), "ncclRecv", comm);
  check_nccl(ncclGroupEnd(), "ncclGroupEnd (p2p)", comm);
  return m.finish(p, s);
}

Pending CudaDriver::copy(const TaskRef& task, const Copy& c, void* src, void* dst) {
  Impl& m = *impl_;
  cudaStream_t s = m.stream(task);
  const Pending p = m.begin(task, s, nullptr);
  // Host buffers are pinned (allocate), so the copy is asynchronous; cudaMemcpyDefault reads the
  // direction from the unified address space.
  check_cuda(cudaMemcpyAsync(dst, src, size_t(c.bytes), cudaMemcpyDefault, s), "cudaMemcpyAsync (copy task)");
  return m.finish(p, s);
}

bool CudaDriver::test(Pending p) {
  if (p == kFinished) return true;
  Impl& m = *impl_;
  Work& w = m.log.at(size_t(p));
  if (w.done) return true;
  const cudaError_t rc = cudaEventQuery(w.end);
  if (rc == cudaErrorNotReady) {
    if (w.comm) {
      ncclResult_t async = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(w.comm, &async), "ncclCommGetAsyncError", w.comm);
      check_nccl(async, "NCCL operation (asynchronous error)", w.comm);
    }
    return false;
  }
  check_cuda(rc, "cudaEventQuery (task end)");
  w.done = true;
  if (!m.timing) {  // nobody will ask for its times: reuse the entry and its events
    m.recycle(w);
    m.free_slots.push_back(p);
  }
  return true;
}

void CudaDriver::begin_step() {
  Impl& m = *impl_;
  for (Work& w : m.log) m.recycle(w);
  m.log.clear();
  m.free_slots.clear();
  check_cuda(cudaEventRecord(m.step_start, m.streams[size_t(Stream::kCompute)]), "cudaEventRecord (step start)");
  m.timing = true;
}

void CudaDriver::end_step(std::vector<TaskTimes>& times) {
  Impl& m = *impl_;
  if (!m.timing) return;
  check_cuda(cudaEventSynchronize(m.step_start), "cudaEventSynchronize (step start)");
  for (Work& w : m.log) {
    if (!w.end) continue;
    if (w.task < times.size()) {
      check_cuda(cudaEventSynchronize(w.end), "cudaEventSynchronize (task end)");
      float start_ms = 0, end_ms = 0;
      check_cuda(cudaEventElapsedTime(&start_ms, m.step_start, w.start), "cudaEventElapsedTime");
      check_cuda(cudaEventElapsedTime(&end_ms, m.step_start, w.end), "cudaEventElapsedTime");
      times[w.task] = {start_ms * 1e-3, end_ms * 1e-3};
    }
    m.recycle(w);
  }
  m.log.clear();
  m.timing = false;
}

}  // namespace tandem::exec
