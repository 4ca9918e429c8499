// Every generator, alone and combined, produces a schedule that the validator accepts: matched
// sends and receives, identical collective sequences within each group, no use of a freed buffer,
// no dependency cycle or deadlock across ranks (shared/schedule_validator.h).
#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "shared/schedule.h"
#include "shared/schedule_validator.h"

namespace tandem {
namespace {

struct Case {
  const char* name;
  std::vector<std::string> sets;
};

class ScheduleValidity : public ::testing::TestWithParam<Case> {};

TEST_P(ScheduleValidity, ValidatorAcceptsTheSchedule) {
  Schedule s(testing::tiny(GetParam().sets));
  std::vector<std::string> problems = validate_schedule(s);
  std::string all;
  for (const std::string& p : problems) all += p + "\n";
  EXPECT_TRUE(problems.empty()) << all;
}

const Case kCases[] = {
    {"single", {}},
    {"dp2", {"cluster.gpus=2"}},
    {"dp2_buckets", {"cluster.gpus=2", "strategy.bucket_mb=0.05"}},
    {"tp2", {"cluster.gpus=2", "strategy.tp=2"}},
    {"tp4", {"cluster.gpus=4", "strategy.tp=4"}},
    {"pp2_1f1b", {"cluster.gpus=2", "strategy.pp=2"}},
    {"pp2_gpipe", {"cluster.gpus=2", "strategy.pp=2", "strategy.pp_schedule=gpipe"}},
    {"pp4_1f1b", {"cluster.gpus=4", "strategy.pp=4"}},
    {"pp2_interleaved", {"cluster.gpus=2", "strategy.pp=2", "strategy.pp_schedule=interleaved", "strategy.virtual_stages=2"}},
    {"tp2_pp2", {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"}},
    {"dp2_tp2_pp2", {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=2"}},
    {"zero1", {"cluster.gpus=2", "strategy.zero_stage=1"}},
    {"zero2", {"cluster.gpus=2", "strategy.zero_stage=2", "strategy.bucket_mb=0.1"}},
    {"zero3", {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.bucket_mb=0.1"}},
    {"zero3_pp2", {"cluster.gpus=4", "strategy.zero_stage=3", "strategy.pp=2", "strategy.bucket_mb=0.1"}},
    {"megatron_sp", {"cluster.gpus=2", "strategy.tp=2", "strategy.sp_mode=megatron"}},
    {"megatron_sp_pp2", {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2", "strategy.sp_mode=megatron"}},
    {"tp_overlap_tp2", {"cluster.gpus=2", "strategy.tp=2", "strategy.sp_mode=megatron", "software.tp_comm_overlap=true"}},
    {"tp_overlap_tp4_pp2_recompute",
     {"cluster.gpus=8", "strategy.tp=4", "strategy.pp=2", "strategy.sp_mode=megatron", "software.tp_comm_overlap=true",
      "strategy.recompute=full"}},
    {"tp_overlap_dp2_tp2_zero3",
     {"cluster.gpus=4", "strategy.tp=2", "strategy.sp_mode=megatron", "software.tp_comm_overlap=true",
      "strategy.zero_stage=3", "strategy.bucket_mb=0.1", "model.dropout=0.1"}},
    {"full_recompute", {"cluster.gpus=2", "strategy.tp=2", "strategy.recompute=full"}},
    {"selective_recompute", {"cluster.gpus=2", "strategy.tp=2", "strategy.recompute=selective", "model.dropout=0.1"}},
    {"dropout_fp16", {"cluster.gpus=2", "strategy.pp=2", "model.dropout=0.1", "strategy.dtype=fp16"}},
    {"llama_style", {"cluster.gpus=2", "strategy.tp=2", "model.norm=rmsnorm", "model.activation=swiglu",
                     "model.tied_embeddings=false", "model.kv_heads=2", "model.ffn_hidden=96"}},
    {"optimizer_offload", {"cluster.gpus=2", "strategy.zero_stage=2", "strategy.offload=optimizer", "strategy.dtype=bf16"}},
    {"untied_pp2", {"cluster.gpus=2", "strategy.pp=2", "model.tied_embeddings=false"}},
    // Gemini chunks with half of them on the host (docs/offload.md), alone and ZeRO-3 over dp 2 in bf16.
    {"params_offload", {"strategy.offload=params", "strategy.offload_fraction=0.5", "strategy.chunk_min_m=0",
                        "strategy.chunk_search_range_m=0"}},
    {"params_offload_dp2_zero3_bf16",
     {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.offload=params", "strategy.offload_fraction=0.5",
      "strategy.chunk_min_m=0", "strategy.chunk_search_range_m=0", "strategy.dtype=bf16"}},
    // Gemini auto with gpu_margin_mem_ratio (tests/shared/offload_margin_test.cc): 2 of 6 chunks'
    // optimizer states on the device on one rank, 5 of 6 over dp 2 (the last chunk of the backward
    // then keeps its state on the device while the first one's gradient is in flight).
    {"auto_margin", {"strategy.offload=auto", "strategy.gpu_margin_mem_ratio=2.5e-5", "strategy.chunk_min_m=0",
                     "strategy.chunk_search_range_m=0"}},
    {"auto_margin_dp2_zero3",
     {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.offload=auto", "strategy.gpu_margin_mem_ratio=2.5e-5",
      "strategy.chunk_min_m=0", "strategy.chunk_search_range_m=0"}},
    // Software presets (docs/software.md): gradient reduction after the backward, fp32 or fp16
    // gradients, the found-inf and gradient-norm all-reduces over tp, pp (and dp with ZeRO).
    {"lm2021_fp16_dp2_tp2_pp2",
     {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=2", "strategy.dtype=fp16", "software.preset=megatron-lm-2021"}},
    // 4 stages: Megatron-LM's interleaved pair exchange is refused on 2 (software.overlap_p2p_comm).
    {"lm2022_fp16_sp_interleaved",
     {"cluster.gpus=8", "model.layers=8", "strategy.tp=2", "strategy.pp=4", "strategy.pp_schedule=interleaved",
      "strategy.virtual_stages=2",
      "strategy.sp_mode=megatron", "strategy.recompute=selective", "strategy.dtype=fp16", "software.preset=megatron-lm-2022"}},
    {"core08_bf16_zero1_overlaps",
     {"cluster.gpus=8", "strategy.tp=2", "strategy.sp_mode=megatron", "strategy.zero_stage=1", "strategy.dtype=bf16",
      "software.grad_reduce_overlap=true", "software.overlap_param_gather=true", "software.tp_comm_overlap=true"}},
    {"core08_bf16_zero2_pp2", {"cluster.gpus=4", "strategy.pp=2", "strategy.zero_stage=2", "strategy.dtype=bf16",
                               "strategy.bucket_mb=0.1"}},
    {"ds2021_fp16_zero1_pp2",
     {"cluster.gpus=4", "strategy.pp=2", "strategy.zero_stage=1", "strategy.dtype=fp16",
      "software.preset=deepspeed-megatron-2021"}},
};

INSTANTIATE_TEST_SUITE_P(Generators, ScheduleValidity, ::testing::ValuesIn(kCases),
                         [](const ::testing::TestParamInfo<Case>& i) { return std::string(i.param.name); });

TEST(ScheduleValidator, CatchesAnUnmatchedSend) {
  // A hand-written two-rank schedule whose rank 0 sends but rank 1 never receives.
  struct Gen : ProgramGenerator {
    Program generate(int rank) const override {
      Program p;
      p.rank = rank;
      Buffer b;
      b.id = 0;
      b.name = "x";
      b.bytes = 64;
      p.buffers.push_back(b);
      p.tasks.push_back({0, Stream::kCompute, {}, Alloc{0}});
      if (rank == 0) p.tasks.push_back({1, Stream::kSendFwd, {0}, SendRecv{true, 1, 64, 0, 0, 0}});
      p.tasks.push_back({static_cast<TaskId>(p.tasks.size()), Stream::kCompute, {}, Free{0}});
      return p;
    }
  };
  Schedule s(testing::tiny({}), 2, {}, std::make_unique<Gen>());
  std::vector<std::string> problems = validate_schedule(s);
  ASSERT_FALSE(problems.empty());
  EXPECT_NE(problems.front().find("no receive"), std::string::npos) << problems.front();
}

TEST(ScheduleValidator, CatchesUseAfterFree) {
  Program p;
  p.rank = 0;
  Buffer b;
  b.id = 0;
  b.name = "y";
  b.bytes = 16;
  p.buffers.push_back(b);
  p.tasks.push_back({0, Stream::kCompute, {}, Alloc{0}});
  p.tasks.push_back({1, Stream::kCompute, {}, Free{0}});
  Compute c;
  c.kernel = Kernel::kGelu;
  c.inputs = {0};
  c.outputs = {0};
  p.tasks.push_back({2, Stream::kCompute, {}, c});
  std::vector<std::string> problems = validate_program(p);
  ASSERT_EQ(problems.size(), 2u);  // the read and the write of y
  EXPECT_NE(problems[0].find("not allocated"), std::string::npos);
}

TEST(ScheduleValidator, CatchesACrossRankDeadlock) {
  // Each rank receives before it sends, on the same stream pair: neither can start.
  struct Gen : ProgramGenerator {
    Program generate(int rank) const override {
      Program p;
      p.rank = rank;
      Buffer b;
      b.id = 0;
      b.name = "x";
      b.bytes = 64;
      p.buffers.push_back(b);
      p.tasks.push_back({0, Stream::kCompute, {}, Alloc{0}});
      p.tasks.push_back({1, Stream::kRecvFwd, {0}, SendRecv{false, 1 - rank, 64, 0, 0, 0}});
      p.tasks.push_back({2, Stream::kSendFwd, {1}, SendRecv{true, 1 - rank, 64, 0, 0, 0}});
      p.tasks.push_back({3, Stream::kCompute, {2}, Free{0}});
      return p;
    }
  };
  Schedule s(testing::tiny({}), 2, {}, std::make_unique<Gen>());
  std::vector<std::string> problems = validate_schedule(s);
  ASSERT_EQ(problems.size(), 1u);
  EXPECT_NE(problems[0].find("deadlock"), std::string::npos) << problems[0];
}

}  // namespace
}  // namespace tandem
