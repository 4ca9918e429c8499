#include "exec/host_driver.h"

#include <malloc.h>

#include <climits>
#include <cstdlib>
#include <cstring>
#include <fstream>

#include "exec/exec_options.h"
#include "exec/sequence_data.h"
#include "exec/synthetic_data.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cpu/all_to_all_layout.h"
#include "kernels/cpu/attention.h"
#include "kernels/cpu/cross_entropy.h"
#include "kernels/cpu/elementwise.h"
#include "kernels/cpu/embedding.h"
#include "kernels/cpu/gelu.h"
#include "kernels/cpu/gemm.h"
#include "kernels/cpu/layer_norm.h"
#include "kernels/cpu/ring_attention.h"
#include "kernels/cpu/ring_self_attention.h"
#include "kernels/cpu/rms_norm.h"
#include "kernels/cpu/split_layer_norm.h"
#include "kernels/cpu/swiglu.h"
#include "shared/error.h"
#include "shared/kernel_signature.h"

namespace tandem::exec {
namespace cpu = tandem::kernels::cpu;

namespace {

float* F(void* p) { return static_cast<float*>(p); }
int32_t* I(void* p) { return static_cast<int32_t*>(p); }

void check_fp32(DType dtype, const char* what) {
  if (dtype != DType::kFp32)
    throw Error(std::string("exec: the host driver stores fp32 only, ") + what + " of a " + to_string(dtype) + " buffer",
                ErrorKind::kInternal);
}

// Colossal-AI's ring self-attention step kernels (shared/ring_self_attention.h): Q is read from
// the fused qkv [rows, 3h], the K and V blocks are [rows, h].
void run_ring_self(const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out) {
  const auto& d = c.dims;
  const cpu::RingSelfShape s{d[0], d[1], d[2], d[3], d[4], d[5]};
  const int64_t h = s.cols();
  const bool acc = (c.flags & kAccumulateOut) != 0;
  switch (c.kernel) {
    case Kernel::kRingSelfPack: return cpu::ring_self_pack(F(in[0]), s, F(out[0]), F(out[1]));
    case Kernel::kRingSelfScores: return cpu::ring_self_scores(F(in[0]), 3 * h, F(in[1]), h, s, F(out[0]));
    case Kernel::kRingSelfSoftmax: return cpu::ring_self_softmax(F(in[0]), s, F(out[0]));
    case Kernel::kRingSelfContext: return cpu::ring_self_context(F(in[0]), F(in[1]), h, s, acc, F(out[0]));
    case Kernel::kRingSelfGradV: return cpu::ring_self_grad_v(F(in[0]), F(in[1]), s, F(out[0]));
    case Kernel::kRingSelfGradProbs: return cpu::ring_self_grad_probs(F(in[0]), F(in[1]), h, s, F(out[0]));
    case Kernel::kRingSelfSoftmaxBwd: return cpu::ring_self_softmax_backward(F(in[0]), F(in[1]), s, F(out[0]));
    case Kernel::kRingSelfGradK: return cpu::ring_self_grad_k(F(in[0]), F(in[1]), 3 * h, s, F(out[0]));
    case Kernel::kRingSelfGradQ: return cpu::ring_self_grad_q(F(in[0]), F(in[1]), h, s, acc, F(out[0]), 3 * h);
    case Kernel::kRingSelfUnpack: return cpu::ring_self_unpack(F(in[0]), F(in[1]), s, F(out[0]));
    default: throw Error(std::string("exec: not a ring self-attention kernel: ") + to_string(c.kernel), ErrorKind::kInternal);
  }
}

class HostDriver : public Driver {
 public:
  explicit HostDriver(HostComm* comm) : comm_(comm) {
    // Freed memory stays in the process for the next step's buffers, as a GPU framework's caching
    // allocator keeps it (exec/cuda/caching_allocator.h). glibc's defaults gave it back: blocks
    // over the mmap threshold were mapped and unmapped per Alloc/Free, and the heap's top trimmed,
    // so every step page-faulted its buffers in again, on one rank and not the other as their heaps
    // happened to lie (measured, tiny GPT DP=2: one rank 5 ms of Allocs per 14 ms step, the other
    // 0.2 ms; docs/exec.md, "Host twin error"). The largest mmap threshold glibc takes is 32 MiB
    // on 64-bit (HEAP_MAX_SIZE / 2); larger buffers are still mapped per Alloc.
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
  }
  const char* name() const override { return "host"; }
  std::string machine() const override;
  void* allocate(int64_t bytes, Placement placement) override;
  void release(void* p, int64_t, Placement) override { std::free(p); }
  void write(void* dst, DType dtype, Placement, const float* src, int64_t count) override {
    check_fp32(dtype, "write");
    std::memcpy(dst, src, size_t(count) * 4);
  }
  void read(float* dst, const void* src, DType dtype, Placement, int64_t count) override {
    check_fp32(dtype, "read");
    std::memcpy(dst, src, size_t(count) * 4);
  }
  Pending compute(const TaskRef& task, const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out,
                  const StepContext& ctx) override;
  Pending collective(const TaskRef&, const Collective& c, void* in, void* out) override {
    if (!comm_) throw Error("exec: a collective in a one-rank run without a communicator", ErrorKind::kInternal);
    return comm_->collective(c, in, out);
  }
  Pending p2p(const TaskRef&, const SendRecv& m, void* buffer) override {
    if (!comm_) throw Error("exec: a message in a one-rank run without a communicator", ErrorKind::kInternal);
    return comm_->p2p(m, buffer);
  }
  Pending copy(const TaskRef&, const Copy& c, void* src, void* dst) override {
    std::memmove(dst, src, size_t(c.bytes));
    return kFinished;
  }
  bool test(Pending p) override { return p == kFinished || (comm_ && comm_->test(p)); }

 private:
  HostComm* comm_;
  std::vector<float> scratch_;  // a micro-batch's token losses
};

}  // namespace

void check_host_scenario(const Scenario& sc) {
  if (sc.strategy.dtype != DType::kFp32)
    throw Error(sc.origin + ": strategy.dtype: the host driver runs fp32 only, got " +
                std::string(to_string(sc.strategy.dtype)) + " (use --set strategy.dtype=fp32)");
  if (sc.model.dropout > 0)
    throw Error(sc.origin + ": model.dropout: the host driver's kernels are dropout-free, got " +
                std::to_string(sc.model.dropout) + " (use --set model.dropout=0)");
}

std::unique_ptr<Driver> make_host_driver(HostComm* comm) { return std::make_unique<HostDriver>(comm); }

std::string HostDriver::machine() const {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) return line.substr(colon + 2) + " (CPU kernels, OpenBLAS, MPI)";
    }
  return "CPU (CPU kernels, OpenBLAS, MPI)";
}

void* HostDriver::allocate(int64_t bytes, Placement) {
  const size_t n = size_t((bytes + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, n == 0 ? 64 : n);
  if (!p) throw Error("exec: out of host memory allocating " + std::to_string(bytes) + " bytes", ErrorKind::kOutOfMemory);
  std::memset(p, 0, n == 0 ? 64 : n);
  return p;
}

Pending HostDriver::compute(const TaskRef& task, const Compute& c, const std::vector<void*>& in,
                            const std::vector<void*>& out, const StepContext& ctx) {
  const auto& d = c.dims;
  const ExecOptions& o = *ctx.options;
  if (c.kernel != Kernel::kData && c.dtype != DType::kFp32)
    throw Error(std::string("exec: the host driver runs fp32 kernels, ") + to_string(c.kernel) + " is " +
                to_string(c.dtype));
  check_arity(c);
  switch (c.kernel) {
    case Kernel::kData: {
      const int64_t samples = d[1], seq = d[2];
      for (int64_t i = 0; i < samples; ++i)
        load_sample_chunks(*ctx.data, c, int64_t(ctx.step) * ctx.global_batch + d[0] + i, I(out[0]) + i * seq,
                           I(out[1]) + i * seq);
      break;
    }
    case Kernel::kEmbedding:
      cpu::embedding_forward(I(in[0]), d[0], F(in[1]), d[2], d[1], d[3], F(out[0]));
      break;
    case Kernel::kEmbeddingBwd:
      cpu::embedding_backward(I(in[0]), d[0], F(in[1]), d[2], d[1], d[3], F(out[0]));
      break;
    case Kernel::kLayerNorm:
      cpu::layer_norm_forward(F(in[0]), F(in[1]), F(in[2]), d[0], d[1], o.norm_eps, F(out[0]), F(out[1]), F(out[2]));
      break;
    case Kernel::kLayerNormBwd:
      cpu::layer_norm_backward(F(in[0]), F(in[1]), F(in[2]), F(in[3]), F(in[4]), d[0], d[1], F(out[0]), F(out[1]),
                               F(out[2]));
      break;
    case Kernel::kRmsNorm:
      cpu::rms_norm_forward(F(in[0]), F(in[1]), d[0], d[1], o.norm_eps, F(out[0]), F(out[1]));
      break;
    case Kernel::kRmsNormBwd:
      cpu::rms_norm_backward(F(in[0]), F(in[1]), F(in[2]), F(in[3]), d[0], d[1], F(out[0]), F(out[1]));
      break;
    case Kernel::kGemm: {
      const bool ta = c.flags & kTransA, tb = c.flags & kTransB;
      const int64_t m = d[0], n = d[1], k = d[2];
      cpu::gemm(ta, tb, m, n, k, 1.0f, F(in[0]), ta ? m : k, F(in[1]), tb ? k : n,
                (c.flags & kAccumulateOut) ? 1.0f : 0.0f, F(out[0]), n);
      break;
    }
    case Kernel::kAttention: {
      const int64_t heads = d[2], kvh = d[3], hd = d[4], ld = (heads + 2 * kvh) * hd;
      const float* qkv = F(in[0]);
      cpu::attention_forward(qkv, ld, qkv + heads * hd, ld, qkv + (heads + kvh) * hd, ld, d[0], d[1], heads, kvh, hd,
                             F(out[0]), F(out[1]), out.size() > 2 ? F(out[2]) : nullptr);
      break;
    }
    case Kernel::kAttentionBwd: {
      const int64_t heads = d[2], kvh = d[3], hd = d[4], ld = (heads + 2 * kvh) * hd;
      const float* qkv = F(in[0]);
      float* dqkv = F(out[0]);
      cpu::attention_backward(qkv, ld, qkv + heads * hd, ld, qkv + (heads + kvh) * hd, ld, F(in[1]), F(in[2]),
                              F(in[3]), in.size() > 4 ? F(in[4]) : nullptr, d[0], d[1], heads, kvh, hd, dqkv, ld,
                              dqkv + heads * hd, ld, dqkv + (heads + kvh) * hd, ld);
      break;
    }
    case Kernel::kGelu:
      cpu::gelu_forward(F(in[0]), F(out[0]), d[0]);
      break;
    case Kernel::kGeluBwd:
      cpu::gelu_backward(F(in[0]), F(in[1]), F(out[0]), d[0]);
      break;
    case Kernel::kSwiglu:
      cpu::swiglu_forward(F(in[0]), d[0], d[1], F(out[0]));
      break;
    case Kernel::kSwigluBwd:
      cpu::swiglu_backward(F(in[0]), F(in[1]), d[0], d[1], F(out[0]));
      break;
    case Kernel::kDropout:
    case Kernel::kDropoutBwd:
      throw Error("exec: the host driver has no dropout kernel (run with model.dropout=0)");
    case Kernel::kAdd:
      cpu::add(F(in[0]), F(in[1]), F(out[0]), d[0]);
      break;
    case Kernel::kAccumulate:
      cpu::accumulate(F(in[0]), F(out[0]), d[0]);
      break;
    case Kernel::kCrossEntropyMax:
      cpu::cross_entropy_local_max(F(in[0]), d[0], d[1], F(out[0]));
      break;
    case Kernel::kCrossEntropySumExp:
      cpu::cross_entropy_local_sum_exp(F(in[0]), d[0], d[1], F(in[1]), F(out[0]));
      break;
    case Kernel::kCrossEntropyTarget:
      cpu::cross_entropy_target_logit(F(in[0]), d[0], d[1], I(in[1]), d[2], F(out[0]));
      break;
    case Kernel::kCrossEntropyLoss: {
      scratch_.resize(size_t(d[0]));
      cpu::cross_entropy_loss(F(in[0]), F(in[1]), F(in[2]), d[0], scratch_.data());
      double sum = 0;  // double: the sum of a micro-batch's token losses is exact to fp32 rounding
      for (float x : scratch_) sum += x;
      F(out[0])[0] += float(sum);
      break;
    }
    case Kernel::kCrossEntropyBwd:
      if (d[3] <= 0) throw Error("exec: cross-entropy backward without tokens_in_batch (dims[3])", ErrorKind::kInternal);
      cpu::cross_entropy_backward(F(in[0]), d[0], d[1], I(in[1]), d[2], F(in[2]), F(in[3]), 1.0f / float(d[3]),
                                  F(out[0]));
      break;
    case Kernel::kAdam: {
      const int64_t n = d[0];
      cpu::adamw_step(F(out[0]), F(in[0]), F(out[1]), F(out[2]), n, o.lr, o.beta1, o.beta2, o.eps, o.weight_decay,
                      ctx.step + 1, task.stream == Stream::kHost ? o.host_adam_threads : 1);
      if (out[3] != out[0]) std::memcpy(out[3], out[0], size_t(n) * 4);  // fp32: the parameter is the master
      break;
    }
    case Kernel::kLayerNormPartialMean:
      cpu::layer_norm_partial_mean(F(in[0]), d[0], d[1], d[2], F(out[0]));
      break;
    case Kernel::kLayerNormPartialVar:
      cpu::layer_norm_partial_var(F(in[0]), F(in[1]), d[0], d[1], d[2], F(out[0]));
      break;
    case Kernel::kLayerNormApply:
      cpu::layer_norm_apply(F(in[0]), F(in[1]), F(in[2]), F(in[3]), F(in[4]), d[0], d[1], o.norm_eps, F(out[0]),
                            F(out[1]));
      break;
    case Kernel::kLayerNormBwdPartialSums:
      cpu::layer_norm_bwd_partial_sums(F(in[0]), F(in[1]), F(in[2]), F(in[3]), F(in[4]), d[0], d[1], d[2],
                                       F(out[0]));
      break;
    case Kernel::kLayerNormBwdApply:
      cpu::layer_norm_bwd_apply(F(in[0]), F(in[1]), F(in[2]), F(in[3]), F(in[4]), F(in[5]), d[0], d[1], F(out[0]),
                                F(out[1]), F(out[2]));
      break;
    case Kernel::kRingAttention:
    case Kernel::kRingAttentionBwd: {
      const cpu::RingBlock b{d[0], d[1], d[2], d[3], d[4], int(d[5])};
      const int64_t q_cols = d[2] * d[4], kv_cols = d[3] * d[4], ld = q_cols + 2 * kv_cols;
      const bool fwd = c.kernel == Kernel::kRingAttention;
      const size_t block_at = fwd ? 1 : 4;  // the K/V block after the first step
      const float* qkv = F(in[0]);
      const bool remote = in.size() > block_at;
      const float* k = remote ? F(in[block_at]) : qkv + q_cols;
      const float* v = remote ? F(in[block_at]) + kv_cols : qkv + q_cols + kv_cols;
      const int64_t kv_ld = remote ? 2 * kv_cols : ld;
      if (fwd) {
        cpu::ring_attention_forward(qkv, ld, k, kv_ld, v, kv_ld, b, (c.flags & kAccumulateOut) != 0, F(out[0]),
                                    F(out[1]));
      } else {
        float* dkv = F(out[1]);
        cpu::ring_attention_backward(qkv, ld, k, kv_ld, v, kv_ld, F(in[1]), F(in[2]), F(in[3]), b, F(out[0]), ld, dkv,
                                     2 * kv_cols, dkv + kv_cols, 2 * kv_cols);
      }
      break;
    }
    case Kernel::kKvPack:
      cpu::kv_pack(F(in[0]), d[0], d[1], d[2], F(out[0]));
      break;
    case Kernel::kKvUnpack:
      cpu::kv_unpack(F(in[0]), d[0], d[1], d[2], F(out[0]));
      break;
    case Kernel::kRingSelfPack:
    case Kernel::kRingSelfScores:
    case Kernel::kRingSelfSoftmax:
    case Kernel::kRingSelfContext:
    case Kernel::kRingSelfGradV:
    case Kernel::kRingSelfGradProbs:
    case Kernel::kRingSelfSoftmaxBwd:
    case Kernel::kRingSelfGradK:
    case Kernel::kRingSelfGradQ:
    case Kernel::kRingSelfUnpack:
      run_ring_self(c, in, out);
      break;
    case Kernel::kAllToAllPack:
    case Kernel::kAllToAllUnpack: {
      const cpu::AllToAllShape shape{d[0], d[1], d[2], d[3], d[4], 4};
      cpu::run_copies(cpu::all_to_all_plan(shape, c.kernel == Kernel::kAllToAllPack, (c.flags & kToHeads) != 0), in[0],
                      out[0]);
      break;
    }
    case Kernel::kOpaque:
      throw Error("exec: an opaque kernel (a node of an imported trace) has nothing to run: only tandem sim replays it",
                  ErrorKind::kBadInput);
  }
  return kFinished;
}

}  // namespace tandem::exec
