#include "traces/task_label.h"

#include <gtest/gtest.h>

#include "trace_test_util.h"

namespace tandem {
namespace {

using testing::compute;
using testing::kMiB;

class TaskLabelTest : public ::testing::Test {
 protected:
  std::string label(TaskOp op) {
    Task t;
    t.id = 0;
    t.op = std::move(op);
    return task_label(schedule_, program_, t);
  }
  std::string kind(TaskOp op) {
    Task t;
    t.op = std::move(op);
    return task_kind(t);
  }
  Schedule schedule_ = testing::sample_schedule();
  Program program_ = testing::sample_program(0);
};

TEST_F(TaskLabelTest, ComputeIsKernelShapeDtype) {
  EXPECT_EQ(label(compute(Kernel::kGemm, DType::kFp16, {2048, 4608, 12288})), "gemm 2048x4608x12288 fp16");
  EXPECT_EQ(label(compute(Kernel::kAttention, DType::kFp16, {1, 2048, 12, 12, 128})),
            "attention b1 s2048 h12 d128 fp16");
  EXPECT_EQ(label(compute(Kernel::kLayerNorm, DType::kFp16, {2048, 12288})), "layernorm 2048x12288 fp16");
  EXPECT_EQ(label(compute(Kernel::kRmsNormBwd, DType::kBf16, {4096, 4096})), "rmsnorm-bwd 4096x4096 bf16");
  EXPECT_EQ(label(compute(Kernel::kGelu, DType::kBf16, {1 << 20})), "gelu 1048576 bf16");
  EXPECT_EQ(label(compute(Kernel::kSwiglu, DType::kBf16, {2048, 11008})), "swiglu 2048x11008 bf16");
}

TEST_F(TaskLabelTest, GroupedQueryAttentionShowsKvHeads) {
  EXPECT_EQ(label(compute(Kernel::kAttentionBwd, DType::kBf16, {2, 4096, 32, 8, 128})),
            "attention-bwd b2 s4096 h32 kv8 d128 bf16");
}

// Offsets and the optimizer step place work without sizing it: ranks holding different shards
// and steps get one label.
TEST_F(TaskLabelTest, PlacementDimsAreLeftOut) {
  EXPECT_EQ(label(compute(Kernel::kEmbedding, DType::kFp16, {2048, 12288, 6283, 0})),
            label(compute(Kernel::kEmbedding, DType::kFp16, {2048, 12288, 6283, 6283})));
  EXPECT_EQ(label(compute(Kernel::kEmbedding, DType::kFp16, {2048, 12288, 6283, 6283})), "embedding 2048x12288x6283 fp16");
  EXPECT_EQ(label(compute(Kernel::kCrossEntropyMax, DType::kFp32, {2048, 6283, 6283})), "xent-max 2048x6283 fp32");
  EXPECT_EQ(label(compute(Kernel::kAdam, DType::kFp32, {1000, 7})), "adam 1000 fp32");
  EXPECT_EQ(label(compute(Kernel::kAdam, DType::kFp32, {1000, 8})), "adam 1000 fp32");
  EXPECT_EQ(label(compute(Kernel::kData, DType::kInt32, {64, 1, 2048})), "data 1x2048 int32");
  EXPECT_EQ(label(compute(Kernel::kData, DType::kInt32, {65, 1, 2048})), "data 1x2048 int32");
}

TEST_F(TaskLabelTest, CollectiveIsOpGroupKindBytes) {
  Collective c;
  c.op = CollectiveOp::kAllReduce;
  c.group = 0;
  c.bytes = 48 * kMiB;
  EXPECT_EQ(label(c), "all-reduce tp 48.0MiB");
  c.op = CollectiveOp::kBroadcast;
  c.group = 1;  // sub-axis 1 of the tensor-parallel grid
  c.bytes = 3 * kMiB / 2;
  EXPECT_EQ(label(c), "broadcast tp1 1.5MiB");
  c.group = 7;  // no such group: still a label
  EXPECT_EQ(label(c), "broadcast ? 1.5MiB");
}

TEST_F(TaskLabelTest, SendRecvCopyAllocFree) {
  EXPECT_EQ(label(SendRecv{true, 1, 24 * kMiB, 0, 0, 0}), "send 24.0MiB");
  EXPECT_EQ(label(SendRecv{false, 1, 24 * kMiB, 0, 0, 0}), "recv 24.0MiB");
  EXPECT_EQ(label(Copy{CopyDirection::kH2D, 12 * kMiB, 0, 1}), "h2d 12.0MiB");
  EXPECT_EQ(label(Copy{CopyDirection::kD2H, 12 * kMiB, 0, 1}), "d2h 12.0MiB");
  EXPECT_EQ(label(Alloc{0}), "alloc");
  EXPECT_EQ(label(Free{0}), "free");
}

TEST_F(TaskLabelTest, KindIsTheLabelsFirstWord) {
  for (const Task& t : program_.tasks) {
    const std::string l = task_label(schedule_, program_, t);
    EXPECT_EQ(label_kind(l), task_kind(t)) << l;
  }
  EXPECT_EQ(kind(compute(Kernel::kGemm, DType::kFp16, {1, 1, 1})), "gemm");
  EXPECT_EQ(kind(compute(Kernel::kAttention, DType::kFp16, {1, 1, 1, 1, 1})), "attention");
  Collective c;
  c.op = CollectiveOp::kReduceScatter;
  EXPECT_EQ(kind(c), "reduce-scatter");
  EXPECT_EQ(kind(SendRecv{true}), "send");
  EXPECT_EQ(kind(Copy{CopyDirection::kD2D}), "d2d");
  EXPECT_EQ(kind(Free{}), "free");
}

TEST(TaskLabelBytes, BinaryUnitsOneDecimal) {
  EXPECT_EQ(format_bytes(0), "0B");
  EXPECT_EQ(format_bytes(1023), "1023B");
  EXPECT_EQ(format_bytes(1536), "1.5KiB");
  EXPECT_EQ(format_bytes(48 * kMiB), "48.0MiB");
  EXPECT_EQ(format_bytes(int64_t(5) << 29), "2.5GiB");
  EXPECT_EQ(format_bytes(int64_t(3) << 40), "3.0TiB");
}

}  // namespace
}  // namespace tandem
