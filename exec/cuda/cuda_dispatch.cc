#include "exec/cuda/cuda_dispatch.h"

#include <cuda_bf16.h>

#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "exec/cuda/bf16_host.h"
#include "exec/cuda/cuda_check.h"
#include "exec/exec_options.h"
#include "exec/sequence_data.h"
#include "exec/synthetic_data.h"
#include "kernels/cpu/adamw.h"
#include "kernels/cuda/adamw.h"
#include "kernels/cuda/all_to_all_layout.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cross_entropy.h"
#include "kernels/cuda/elementwise.h"
#include "kernels/cuda/embedding.h"
#include "kernels/cuda/gelu.h"
#include "kernels/cuda/gemm.h"
#include "kernels/cuda/layer_norm.h"
#include "kernels/cuda/ring_attention.h"
#include "kernels/cuda/ring_self_attention.h"
#include "kernels/cuda/rms_norm.h"
#include "kernels/cuda/split_layer_norm.h"
#include "kernels/cuda/swiglu.h"
#include "shared/kernel_signature.h"

namespace tandem::exec {
namespace kc = tandem::kernels::cuda;
using bf16 = __nv_bfloat16;

DeviceScratch::~DeviceScratch() {
  if (p_ && cudaFree(p_) != cudaSuccess) std::fprintf(stderr, "tandem: cudaFree (scratch) failed\n");
}

void* DeviceScratch::get(int64_t bytes) {
  if (bytes <= bytes_) return p_;
  if (p_) check_cuda(cudaFree(p_), "cudaFree (scratch)");
  p_ = nullptr;
  bytes_ = 0;
  check_cuda(cudaMalloc(&p_, size_t(bytes)), "cudaMalloc (scratch)");
  bytes_ = bytes;
  return p_;
}

namespace {

float* F(void* p) { return static_cast<float*>(p); }
int32_t* I(void* p) { return static_cast<int32_t*>(p); }
template <class T>
T* P(void* p) {
  return static_cast<T*>(p);
}

template <class T>
constexpr DType dtype_of() {
  return std::is_same_v<T, float> ? DType::kFp32 : DType::kBf16;
}

// The kernel reads buffer `id` as `want`: anything else is a schedule the driver cannot run.
void expect(const Compute& c, const DispatchContext& dc, BufferId id, DType want) {
  const Buffer& b = dc.program->buffers.at(id);
  if (b.dtype != want)
    throw Error(std::string("exec: the CUDA driver's ") + to_string(c.kernel) + " kernel reads " + b.name + " as " +
                    to_string(want) + ", the schedule gives it " + to_string(b.dtype),
                ErrorKind::kInternal);
}

// Runs a kernels/cuda call, turning its std exceptions into Error.
template <class F>
void call(const Compute& c, F&& f) {
  try {
    f();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {
    throw Error(std::string("exec: CUDA kernel ") + to_string(c.kernel) + ": " + e.what(), ErrorKind::kFault);
  }
}

void data(const Compute& c, const std::vector<void*>& out, const StepContext& ctx, const DispatchContext& dc) {
  const auto& d = c.dims;
  const int64_t samples = d[1], seq = d[2];
  std::vector<int32_t> tokens(size_t(samples * seq)), targets(size_t(samples * seq));
  for (int64_t i = 0; i < samples; ++i)
    load_sample_chunks(*ctx.data, c, int64_t(ctx.step) * ctx.global_batch + d[0] + i, tokens.data() + i * seq,
                       targets.data() + i * seq);
  // From pageable memory: cudaMemcpyAsync returns once the source has been staged, so the vectors
  // may go out of scope.
  const size_t bytes = tokens.size() * 4;
  check_cuda(cudaMemcpyAsync(out[0], tokens.data(), bytes, cudaMemcpyHostToDevice, dc.stream),
             "cudaMemcpyAsync (data tokens)");
  check_cuda(cudaMemcpyAsync(out[1], targets.data(), bytes, cudaMemcpyHostToDevice, dc.stream),
             "cudaMemcpyAsync (data targets)");
}

// Per-token losses on the device, summed in double on the host (as HostDriver) into out[0][0].
void loss(const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out, const DispatchContext& dc) {
  const int64_t n = c.dims[0];
  float* per_token = F(dc.scratch->get(n * 4));
  call(c, [&] { kc::cross_entropy_loss(F(in[0]), F(in[1]), F(in[2]), n, per_token, dc.stream); });
  std::vector<float> host(static_cast<size_t>(n));
  float acc = 0;
  check_cuda(cudaMemcpyAsync(host.data(), per_token, size_t(n) * 4, cudaMemcpyDeviceToHost, dc.stream),
             "cudaMemcpyAsync (token losses)");
  check_cuda(cudaMemcpyAsync(&acc, out[0], 4, cudaMemcpyDeviceToHost, dc.stream), "cudaMemcpyAsync (loss)");
  check_cuda(cudaStreamSynchronize(dc.stream), "cudaStreamSynchronize (loss)");
  double sum = 0;
  for (float x : host) sum += x;
  acc += float(sum);
  check_cuda(cudaMemcpyAsync(out[0], &acc, 4, cudaMemcpyHostToDevice, dc.stream), "cudaMemcpyAsync (loss)");
  check_cuda(cudaStreamSynchronize(dc.stream), "cudaStreamSynchronize (loss)");
}

// The offloaded optimizer: CPU AdamW over the pinned host master, m and v.
void host_adam(const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out, const StepContext& ctx,
               const DispatchContext& dc) {
  const ExecOptions& o = *ctx.options;
  const int64_t n = c.dims[0];
  const float* grad = F(in[0]);
  std::vector<float> widened;
  if (c.dtype == DType::kBf16) {
    widened.resize(size_t(n));
    const uint16_t* g = static_cast<const uint16_t*>(in[0]);
    for (int64_t i = 0; i < n; ++i) widened[size_t(i)] = bf16_bits_to_float(g[i]);
    grad = widened.data();
  }
  for (int i = 1; i < 4; ++i)
    if (dc.program->buffers.at(c.outputs[size_t(i)]).placement == Placement::kDevice)
      throw Error("exec: host Adam with " + dc.program->buffers[c.outputs[size_t(i)]].name + " on the device", ErrorKind::kInternal);
  call(c, [&] {
    kernels::cpu::adamw_step(F(out[0]), grad, F(out[1]), F(out[2]), n, o.lr, o.beta1, o.beta2, o.eps, o.weight_decay,
                             ctx.step + 1, o.host_adam_threads);
  });
  if (out[3] == out[0]) return;
  if (c.dtype == DType::kBf16) {
    uint16_t* p = static_cast<uint16_t*>(out[3]);
    for (int64_t i = 0; i < n; ++i) p[i] = float_to_bf16_bits(F(out[0])[i]);
  } else {
    std::memcpy(out[3], out[0], size_t(n) * 4);
  }
}

template <class T>
void device_adam(const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out,
                 const StepContext& ctx, const DispatchContext& dc) {
  const ExecOptions& o = *ctx.options;
  const int64_t n = c.dims[0];
  expect(c, dc, c.inputs[0], dtype_of<T>());
  // bf16 moments and no master (software.optimizer_state_dtype=param, master_params=none): the
  // parameter is updated in place from its bf16 value (shared/grad_sync.cc passes it as the master).
  if constexpr (std::is_same_v<T, bf16>) {
    if (dc.program->buffers.at(c.outputs[1]).dtype == DType::kBf16) {
      if (out[3] != out[0]) throw Error("exec: bf16 moments with a master copy are not run by the CUDA driver", ErrorKind::kInternal);
      for (int i = 0; i < 4; ++i) expect(c, dc, c.outputs[size_t(i)], DType::kBf16);
      call(c, [&] {
        kc::adamw_step(P<bf16>(out[0]), P<bf16>(in[0]), P<bf16>(out[1]), P<bf16>(out[2]), n, o.lr, o.beta1, o.beta2,
                       o.eps, o.weight_decay, ctx.step + 1, dc.stream);
      });
      return;
    }
  }
  for (int i = 0; i < 3; ++i) expect(c, dc, c.outputs[size_t(i)], DType::kFp32);
  expect(c, dc, c.outputs[3], dtype_of<T>());
  if constexpr (std::is_same_v<T, float>) {
    call(c, [&] {
      kc::adamw_step(F(out[0]), F(in[0]), F(out[1]), F(out[2]), n, o.lr, o.beta1, o.beta2, o.eps, o.weight_decay,
                     ctx.step + 1, dc.stream);
    });
    if (out[3] != out[0])
      check_cuda(cudaMemcpyAsync(out[3], out[0], size_t(n) * 4, cudaMemcpyDeviceToDevice, dc.stream),
                 "cudaMemcpyAsync (Adam master to parameter)");
  } else {
    if (out[3] == out[0]) throw Error("exec: bf16 Adam needs an fp32 master distinct from the parameter", ErrorKind::kInternal);
    call(c, [&] {
      kc::adamw_step(F(out[0]), P<bf16>(in[0]), F(out[1]), F(out[2]), n, o.lr, o.beta1, o.beta2, o.eps,
                     o.weight_decay, ctx.step + 1, P<bf16>(out[3]), dc.stream);
    });
  }
}

template <class T>
void run(const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out, const StepContext& ctx,
         const DispatchContext& dc) {
  const auto& d = c.dims;
  const ExecOptions& o = *ctx.options;
  const DType t = dtype_of<T>();
  cudaStream_t s = dc.stream;
  switch (c.kernel) {
    case Kernel::kData:
      data(c, out, ctx, dc);
      break;
    case Kernel::kEmbedding:
      expect(c, dc, c.inputs[1], t);
      expect(c, dc, c.outputs[0], t);
      call(c, [&] { kc::embedding_forward(I(in[0]), d[0], P<T>(in[1]), d[2], d[1], d[3], P<T>(out[0]), s); });
      break;
    case Kernel::kEmbeddingBwd:
      expect(c, dc, c.inputs[1], t);
      expect(c, dc, c.outputs[0], t);
      call(c, [&] { kc::embedding_backward(I(in[0]), d[0], P<T>(in[1]), d[2], d[1], d[3], P<T>(out[0]), s); });
      break;
    case Kernel::kLayerNorm:
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.outputs[1], DType::kFp32);
      call(c, [&] {
        kc::layer_norm_forward(P<T>(in[0]), P<T>(in[1]), P<T>(in[2]), d[0], d[1], o.norm_eps, P<T>(out[0]),
                               F(out[1]), F(out[2]), s);
      });
      break;
    case Kernel::kLayerNormBwd:
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.inputs[3], DType::kFp32);
      expect(c, dc, c.outputs[1], t);
      call(c, [&] {
        kc::layer_norm_backward(P<T>(in[0]), P<T>(in[1]), P<T>(in[2]), F(in[3]), F(in[4]), d[0], d[1], P<T>(out[0]),
                                P<T>(out[1]), P<T>(out[2]), s);
      });
      break;
    case Kernel::kRmsNorm:
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.outputs[1], DType::kFp32);
      call(c, [&] {
        kc::rms_norm_forward(P<T>(in[0]), P<T>(in[1]), d[0], d[1], o.norm_eps, P<T>(out[0]), F(out[1]), s);
      });
      break;
    case Kernel::kRmsNormBwd:
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.inputs[3], DType::kFp32);
      expect(c, dc, c.outputs[1], t);
      call(c, [&] {
        kc::rms_norm_backward(P<T>(in[0]), P<T>(in[1]), P<T>(in[2]), F(in[3]), d[0], d[1], P<T>(out[0]),
                              P<T>(out[1]), s);
      });
      break;
    case Kernel::kGemm: {
      const bool ta = c.flags & kTransA, tb = c.flags & kTransB;
      const int64_t m = d[0], n = d[1], k = d[2];
      const float beta = (c.flags & kAccumulateOut) ? 1.0f : 0.0f;
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.inputs[1], t);
      const DType ct = dc.program->buffers.at(c.outputs[0]).dtype;
      if constexpr (std::is_same_v<T, bf16>) {
        if (ct == DType::kFp32) {
          call(c, [&] {
            kc::gemm(dc.cublas, ta, tb, m, n, k, 1.0f, P<bf16>(in[0]), ta ? m : k, P<bf16>(in[1]), tb ? k : n, beta,
                     F(out[0]), n, s);
          });
          break;
        }
      }
      expect(c, dc, c.outputs[0], t);
      call(c, [&] {
        kc::gemm(dc.cublas, ta, tb, m, n, k, 1.0f, P<T>(in[0]), ta ? m : k, P<T>(in[1]), tb ? k : n, beta,
                 P<T>(out[0]), n, s);
      });
      break;
    }
    case Kernel::kAttention: {
      if (c.outputs.size() > 3) throw Error("exec: the CUDA driver has no attention dropout (run with model.dropout=0)");
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.outputs[1], DType::kFp32);
      const int64_t heads = d[2], kvh = d[3], hd = d[4], ld = (heads + 2 * kvh) * hd;
      const T* qkv = P<T>(in[0]);
      T* probs = out.size() > 2 ? P<T>(out[2]) : nullptr;
      call(c, [&] {
        kc::attention_forward(qkv, ld, qkv + heads * hd, ld, qkv + (heads + kvh) * hd, ld, d[0], d[1], heads, kvh, hd,
                              P<T>(out[0]), F(out[1]), probs, s);
      });
      break;
    }
    case Kernel::kAttentionBwd: {
      if (c.inputs.size() > 5) throw Error("exec: the CUDA driver has no attention dropout (run with model.dropout=0)");
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.inputs[3], DType::kFp32);
      expect(c, dc, c.outputs[0], t);
      const int64_t heads = d[2], kvh = d[3], hd = d[4], ld = (heads + 2 * kvh) * hd;
      const T* qkv = P<T>(in[0]);
      T* dqkv = P<T>(out[0]);
      const T* probs = in.size() > 4 ? P<T>(in[4]) : nullptr;
      call(c, [&] {
        kc::attention_backward(qkv, ld, qkv + heads * hd, ld, qkv + (heads + kvh) * hd, ld, P<T>(in[1]), P<T>(in[2]),
                               F(in[3]), probs, d[0], d[1], heads, kvh, hd, dqkv, ld, dqkv + heads * hd, ld,
                               dqkv + (heads + kvh) * hd, ld, s);
      });
      break;
    }
    case Kernel::kGelu:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] { kc::gelu_forward(P<T>(in[0]), P<T>(out[0]), d[0], s); });
      break;
    case Kernel::kGeluBwd:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] { kc::gelu_backward(P<T>(in[0]), P<T>(in[1]), P<T>(out[0]), d[0], s); });
      break;
    case Kernel::kSwiglu:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] { kc::swiglu_forward(P<T>(in[0]), d[0], d[1], P<T>(out[0]), s); });
      break;
    case Kernel::kSwigluBwd:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] { kc::swiglu_backward(P<T>(in[0]), P<T>(in[1]), d[0], d[1], P<T>(out[0]), s); });
      break;
    case Kernel::kDropout:
    case Kernel::kDropoutBwd:
      throw Error("exec: the CUDA driver has no dropout kernel (run with model.dropout=0)");
    case Kernel::kAdd:
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.inputs[1], t);
      expect(c, dc, c.outputs[0], t);
      call(c, [&] { kc::add(P<T>(in[0]), P<T>(in[1]), P<T>(out[0]), d[0], s); });
      break;
    case Kernel::kAccumulate:
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.outputs[0], t);
      call(c, [&] { kc::accumulate(P<T>(in[0]), P<T>(out[0]), d[0], s); });
      break;
    case Kernel::kCrossEntropyMax:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] { kc::cross_entropy_local_max(P<T>(in[0]), d[0], d[1], F(out[0]), s); });
      break;
    case Kernel::kCrossEntropySumExp:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] { kc::cross_entropy_local_sum_exp(P<T>(in[0]), d[0], d[1], F(in[1]), F(out[0]), s); });
      break;
    case Kernel::kCrossEntropyTarget:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] { kc::cross_entropy_target_logit(P<T>(in[0]), d[0], d[1], I(in[1]), d[2], F(out[0]), s); });
      break;
    case Kernel::kCrossEntropyLoss:
      loss(c, in, out, dc);
      break;
    case Kernel::kCrossEntropyBwd:
      if (d[3] <= 0) throw Error("exec: cross-entropy backward without tokens_in_batch (dims[3])", ErrorKind::kInternal);
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.outputs[0], t);
      call(c, [&] {
        kc::cross_entropy_backward(P<T>(in[0]), d[0], d[1], I(in[1]), d[2], F(in[2]), F(in[3]), 1.0f / float(d[3]),
                                   P<T>(out[0]), s);
      });
      break;
    case Kernel::kAdam:
      if (dc.program->buffers.at(c.outputs[0]).placement != Placement::kDevice)
        host_adam(c, in, out, ctx, dc);
      else
        device_adam<T>(c, in, out, ctx, dc);
      break;
    case Kernel::kLayerNormPartialMean:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] { kc::layer_norm_partial_mean(P<T>(in[0]), d[0], d[1], d[2], F(out[0]), s); });
      break;
    case Kernel::kLayerNormPartialVar:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] { kc::layer_norm_partial_var(P<T>(in[0]), F(in[1]), d[0], d[1], d[2], F(out[0]), s); });
      break;
    case Kernel::kLayerNormApply:
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.outputs[1], DType::kFp32);
      call(c, [&] {
        kc::layer_norm_apply(P<T>(in[0]), P<T>(in[1]), P<T>(in[2]), F(in[3]), F(in[4]), d[0], d[1], o.norm_eps,
                             P<T>(out[0]), F(out[1]), s);
      });
      break;
    case Kernel::kLayerNormBwdPartialSums:
      expect(c, dc, c.inputs[0], t);
      call(c, [&] {
        kc::layer_norm_bwd_partial_sums(P<T>(in[0]), P<T>(in[1]), P<T>(in[2]), F(in[3]), F(in[4]), d[0], d[1], d[2],
                                        F(out[0]), s);
      });
      break;
    case Kernel::kLayerNormBwdApply:
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.outputs[1], t);
      call(c, [&] {
        kc::layer_norm_bwd_apply(P<T>(in[0]), P<T>(in[1]), P<T>(in[2]), F(in[3]), F(in[4]), F(in[5]), d[0], d[1],
                                 P<T>(out[0]), P<T>(out[1]), P<T>(out[2]), s);
      });
      break;
    case Kernel::kRingAttention:
    case Kernel::kRingAttentionBwd: {
      const kernels::cpu::RingBlock b{d[0], d[1], d[2], d[3], d[4], int(d[5])};
      const int64_t q_cols = d[2] * d[4], kv_cols = d[3] * d[4], ld = q_cols + 2 * kv_cols;
      const bool fwd = c.kernel == Kernel::kRingAttention;
      const size_t block_at = fwd ? 1 : 4;  // the K/V block after the first step
      const bool remote = in.size() > block_at;
      expect(c, dc, c.inputs[0], t);
      if (remote) expect(c, dc, c.inputs[block_at], t);
      const T* qkv = P<T>(in[0]);
      const T* k = remote ? P<T>(in[block_at]) : qkv + q_cols;
      const T* v = remote ? P<T>(in[block_at]) + kv_cols : qkv + q_cols + kv_cols;
      const int64_t kv_ld = remote ? 2 * kv_cols : ld;
      if (fwd) {
        expect(c, dc, c.outputs[1], DType::kFp32);
        call(c, [&] {
          kc::ring_attention_forward(qkv, ld, k, kv_ld, v, kv_ld, b, (c.flags & kAccumulateOut) != 0, P<T>(out[0]),
                                     F(out[1]), s);
        });
      } else {
        expect(c, dc, c.outputs[1], DType::kFp32);
        float* dkv = F(out[1]);
        call(c, [&] {
          kc::ring_attention_backward(qkv, ld, k, kv_ld, v, kv_ld, P<T>(in[1]), P<T>(in[2]), F(in[3]), b, P<T>(out[0]),
                                      ld, dkv, 2 * kv_cols, dkv + kv_cols, 2 * kv_cols, s);
        });
      }
      break;
    }
    case Kernel::kRingSelfPack:
    case Kernel::kRingSelfScores:
    case Kernel::kRingSelfSoftmax:
    case Kernel::kRingSelfContext:
    case Kernel::kRingSelfGradV:
    case Kernel::kRingSelfGradProbs:
    case Kernel::kRingSelfSoftmaxBwd:
    case Kernel::kRingSelfGradK:
    case Kernel::kRingSelfGradQ:
    case Kernel::kRingSelfUnpack: {
      // Colossal-AI's ring self-attention (kernels/cuda/ring_self_attention.h): every operand in
      // the training dtype; Q from the fused qkv [rows, 3h], K and V blocks [rows, h].
      const kernels::cpu::RingSelfShape rs{d[0], d[1], d[2], d[3], d[4], d[5]};
      const int64_t h = rs.cols();
      const bool acc = (c.flags & kAccumulateOut) != 0;
      for (BufferId b : c.inputs) expect(c, dc, b, t);
      for (BufferId b : c.outputs) expect(c, dc, b, t);
      call(c, [&] {
        switch (c.kernel) {
          case Kernel::kRingSelfPack: return kc::ring_self_pack(P<T>(in[0]), rs, P<T>(out[0]), P<T>(out[1]), s);
          case Kernel::kRingSelfScores: return kc::ring_self_scores(P<T>(in[0]), 3 * h, P<T>(in[1]), h, rs, P<T>(out[0]), s);
          case Kernel::kRingSelfSoftmax: return kc::ring_self_softmax(P<T>(in[0]), rs, P<T>(out[0]), s);
          case Kernel::kRingSelfContext:
            return kc::ring_self_context(P<T>(in[0]), P<T>(in[1]), h, rs, acc, P<T>(out[0]), s);
          case Kernel::kRingSelfGradV: return kc::ring_self_grad_v(P<T>(in[0]), P<T>(in[1]), rs, P<T>(out[0]), s);
          case Kernel::kRingSelfGradProbs:
            return kc::ring_self_grad_probs(P<T>(in[0]), P<T>(in[1]), h, rs, P<T>(out[0]), s);
          case Kernel::kRingSelfSoftmaxBwd:
            return kc::ring_self_softmax_backward(P<T>(in[0]), P<T>(in[1]), rs, P<T>(out[0]), s);
          case Kernel::kRingSelfGradK:
            return kc::ring_self_grad_k(P<T>(in[0]), P<T>(in[1]), 3 * h, rs, P<T>(out[0]), s);
          case Kernel::kRingSelfGradQ:
            return kc::ring_self_grad_q(P<T>(in[0]), P<T>(in[1]), h, rs, acc, P<T>(out[0]), 3 * h, s);
          default: return kc::ring_self_unpack(P<T>(in[0]), P<T>(in[1]), rs, P<T>(out[0]), s);
        }
      });
      break;
    }
    case Kernel::kKvPack:
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.outputs[0], t);
      call(c, [&] { kc::kv_pack(P<T>(in[0]), d[0], d[1], d[2], P<T>(out[0]), s); });
      break;
    case Kernel::kKvUnpack:
      expect(c, dc, c.inputs[0], DType::kFp32);
      expect(c, dc, c.outputs[0], t);
      call(c, [&] { kc::kv_unpack(F(in[0]), d[0], d[1], d[2], P<T>(out[0]), s); });
      break;
    case Kernel::kAllToAllPack:
    case Kernel::kAllToAllUnpack: {
      expect(c, dc, c.inputs[0], t);
      expect(c, dc, c.outputs[0], t);
      const kernels::cpu::AllToAllShape shape{d[0], d[1], d[2], d[3], d[4], int(sizeof(T))};
      call(c, [&] {
        kc::run_copies(kernels::cpu::all_to_all_plan(shape, c.kernel == Kernel::kAllToAllPack, (c.flags & kToHeads) != 0),
                       in[0], out[0], s);
      });
      break;
    }
    case Kernel::kOpaque:
      throw Error("exec: an opaque kernel (a node of an imported trace) has nothing to run: only tandem sim replays it",
                  ErrorKind::kBadInput);
  }
}

}  // namespace

void run_compute(const Compute& c, const std::vector<void*>& in, const std::vector<void*>& out,
                 const StepContext& ctx, const DispatchContext& dc) {
  check_arity(c);
  switch (c.dtype) {
    case DType::kFp32:
      return run<float>(c, in, out, ctx, dc);
    case DType::kBf16:
      return run<bf16>(c, in, out, ctx, dc);
    default:
      if (c.kernel == Kernel::kData) return run<float>(c, in, out, ctx, dc);
      throw Error(std::string("exec: the CUDA driver runs fp32 and bf16 kernels, ") + to_string(c.kernel) + " is " +
                  to_string(c.dtype) + " (use --set strategy.dtype=bf16)");
  }
}

}  // namespace tandem::exec
