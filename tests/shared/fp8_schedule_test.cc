// strategy.dtype fp8 (shared/fp8_recipe.h, shared/fp8_state.cc): GEMM element types, the memory
// Transformer Engine adds, the amax reductions, and the A100 refusal. Every figure below is derived
// by hand from the tiny GPT (4 layers, hidden 64, 4 heads, ffn 4*64, vocab 256, seq 32,
// micro_batch 2, global_batch 8, tied embeddings, no biases) and TE's rules.
#include <gtest/gtest.h>

#include <string>

#include "schedule_test_util.h"
#include "shared/error.h"
#include "shared/memory_timeline.h"
#include "shared/schedule.h"

namespace tandem {
namespace {

using testing::tiny;

Scenario tiny_h100(std::vector<std::string> sets) {
  sets.insert(sets.begin(), "cluster.preset=dgx-h100");
  return tiny(sets);
}

// Per layer: GEMM weights q, k, v, o (4 h^2) and fc1, fc2 (2 h * 4h = 8 h^2) = 12 * 64^2 = 49,152
// elements; FP8 copy + FP8 transpose = 2 bytes each = 98,304 bytes. Scaling state: 4 GEMMs x
// (3 forward + 2 backward tensors) x (scale 4 + scale_inv 4 + amax history 1024 x 4 bytes)
// = 20 x 4,104 = 82,080 bytes. 4 layers: 4 x (98,304 + 82,080) = 721,536 bytes.
constexpr int64_t kWeightCopyBytesPerLayer = 2 * 12 * 64 * 64;
constexpr int64_t kScalingBytesPerLayer = 4 * 5 * (4 + 4 + 4 * 1024);
constexpr int64_t kFp8StateBytes = 4 * (kWeightCopyBytesPerLayer + kScalingBytesPerLayer);

TEST(Fp8Schedule, StateBytesAreTheWeightCopiesAndScalingState) {
  static_assert(kFp8StateBytes == 721536);
  const Schedule s(tiny_h100({"strategy.dtype=fp8"}));
  int64_t weights = 0, scaling = 0;
  for (const Buffer& b : s.program(0).buffers) {
    const std::string& n = b.name;
    if (n.find("fp8_weight") != std::string::npos) {
      EXPECT_EQ(b.role, BufferRole::kWorkspace) << n;
      weights += b.bytes;
    }
    if (n.find("fp8_scaling") != std::string::npos) scaling += b.bytes;
  }
  EXPECT_EQ(weights, 4 * kWeightCopyBytesPerLayer);
  EXPECT_EQ(scaling, 4 * kScalingBytesPerLayer);
}

TEST(Fp8Schedule, PeakIsTheBf16PeakPlusTheFp8State) {
  // Everything but the GEMMs stays bf16 (activations, parameters, gradients, the fp32 master and
  // Adam states), so on one GPU (no amax reduction) the peak grows by exactly the FP8 state.
  const Schedule fp8(tiny_h100({"strategy.dtype=fp8"}));
  const Schedule bf16(tiny_h100({"strategy.dtype=bf16"}));
  const MemoryProfile a = memory_profile(fp8.program(0)), b = memory_profile(bf16.program(0));
  EXPECT_EQ(a.peak_device_bytes - b.peak_device_bytes, kFp8StateBytes);
  EXPECT_EQ(a.at_peak[BufferRole::kWorkspace] - b.at_peak[BufferRole::kWorkspace], kFp8StateBytes);
  EXPECT_EQ(a.at_peak[BufferRole::kParam], b.at_peak[BufferRole::kParam]);
  EXPECT_EQ(a.at_peak[BufferRole::kOptimizer], b.at_peak[BufferRole::kOptimizer]);
}

TEST(Fp8Schedule, LayerGemmsAreE4m3ForwardE5m2BackwardHeadStaysBf16) {
  // 4 micro-batches x 4 layers x 4 linears: 64 forward GEMMs (e4m3) and 128 backward ones
  // (dgrad + wgrad, e5m2 gradient). The tied head: 1 forward + dgrad + wgrad per micro-batch = 12
  // bf16 GEMMs. Every other kernel runs bf16, as under strategy.dtype bf16 (the data loader's int32
  // and the loss accumulation in fp32 aside).
  const Schedule s(tiny_h100({"strategy.dtype=fp8"}));
  int e4m3 = 0, e5m2 = 0, bf16 = 0, other = 0;
  for (const Task& t : s.program(0).tasks) {
    const auto* c = std::get_if<Compute>(&t.op);
    if (!c) continue;
    if (c->kernel == Kernel::kGemm) {
      if (c->dtype == DType::kFp8E4M3) ++e4m3;
      else if (c->dtype == DType::kFp8E5M2) ++e5m2;
      else if (c->dtype == DType::kBf16) ++bf16;
      else ++other;
    } else if (c->kernel != Kernel::kData && c->kernel != Kernel::kCrossEntropyLoss && c->dtype != DType::kBf16) {
      ++other;
    }
  }
  EXPECT_EQ(e4m3, 64);
  EXPECT_EQ(e5m2, 128);
  EXPECT_EQ(bf16, 12);
  EXPECT_EQ(other, 0);
}

TEST(Fp8Schedule, AmaxIsMaxReducedOverTensorThenDataGroupEachMicroBatch) {
  // tp 2, dp 2: 8 / (2 x 2) = 2 micro-batches per rank. Each forward all-reduces the latest amax
  // of 3 tensors x 4 GEMMs x 4 layers (fp32) = 192 bytes, each backward 2 x 4 x 4 x 4 = 128 bytes,
  // with MAX, once over the tensor group and once over the data group, on the compute stream.
  const Schedule s(tiny_h100({"cluster.gpus=4", "strategy.tp=2", "strategy.dtype=fp8"}));
  for (int r = 0; r < 4; ++r) {
    int fwd = 0, bwd = 0, tp = 0, dp = 0;
    for (const Task& t : s.program(r).tasks) {
      const auto* c = std::get_if<Collective>(&t.op);
      // The amax buffers (the loss's vocabulary-parallel max is a MAX all-reduce too).
      if (!c || s.program(r).buffers.at(c->buffers.at(0)).name.find("amax") == std::string::npos) continue;
      EXPECT_EQ(c->reduce, ReduceOp::kMax);
      EXPECT_EQ(t.stream, Stream::kCompute);
      EXPECT_EQ(c->op, CollectiveOp::kAllReduce);
      if (c->bytes == 192) ++fwd;
      else if (c->bytes == 128) ++bwd;
      else ADD_FAILURE() << "amax all-reduce of " << c->bytes << " bytes";
      if (c->group == s.group_of(r, GroupKind::kTp)) ++tp;
      if (c->group == s.group_of(r, GroupKind::kDp)) ++dp;
    }
    EXPECT_EQ(fwd, 4) << "rank " << r;  // 2 micro-batches x 2 groups
    EXPECT_EQ(bwd, 4) << "rank " << r;
    EXPECT_EQ(tp, 4) << "rank " << r;
    EXPECT_EQ(dp, 4) << "rank " << r;
  }
}

TEST(Fp8Schedule, RefusedOnAGpuWithoutFp8) {
  // tiny-gpt's own cluster is dgx-a100-80g: the A100 has no FP8 tensor cores.
  try {
    tiny({"strategy.dtype=fp8"});
    FAIL() << "fp8 on an A100 was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    const std::string m = e.what();
    EXPECT_NE(m.find("strategy.dtype"), std::string::npos) << m;
    EXPECT_NE(m.find("FP8 tensor cores"), std::string::npos) << m;
    EXPECT_NE(m.find("dgx-a100-80g"), std::string::npos) << m;
  }
}

TEST(Fp8Schedule, PresetPeaksAreTheDatasheetDenseFigures) {
  // H100 SXM / H200 SXM datasheets: FP8 Tensor Core 3,958 TFLOPS with sparsity, dense half of it.
  for (const char* preset : {"dgx-h100", "hgx-h200"}) {
    const Scenario sc = tiny({std::string("cluster.preset=") + preset, "strategy.dtype=fp8"});
    EXPECT_DOUBLE_EQ(sc.cluster.peak_tflops(DType::kFp8E4M3), 1978.9) << preset;
    EXPECT_DOUBLE_EQ(sc.cluster.peak_tflops(DType::kFp8E5M2), 1978.9) << preset;
    EXPECT_DOUBLE_EQ(sc.cluster.peak_tflops(DType::kBf16), 989.4) << preset;
    EXPECT_EQ(sc.strategy.dtype, DType::kFp8);
  }
  EXPECT_EQ(tiny({}).cluster.peak_fp8_tflops, 0.0);
}

}  // namespace
}  // namespace tandem
