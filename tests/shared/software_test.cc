// The software part of a scenario (docs/software.md): the presets load with the values their
// comments cite from the frameworks' sources, bad names and fields are refused with the file, line
// and the valid choices, and every software item changes the schedule as the framework does:
// gradient buffers' dtype, the data-parallel reduction after the backward, the found-inf and
// gradient-norm all-reduces over the model-parallel group, and the optimizer step's bytes.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "schedule_test_util.h"
#include "shared/error.h"
#include "shared/optimizer_bytes.h"
#include "shared/param_layout.h"
#include "shared/rank_grid.h"
#include "shared/reference_executor.h"
#include "shared/schedule.h"

namespace tandem {
namespace {

using testing::tiny;

std::string error_of(const std::vector<std::string>& sets) {
  try {
    tiny(sets);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// Values from the frameworks' sources, as the preset files cite them.
TEST(SoftwarePresets, ValuesFromTheFrameworkSources) {
  // Megatron-LM v2.5: local DDP reduces after the backward (training.py:369), fp16 main_grad by
  // default (arguments.py:553), --clip-grad 1.0 (arguments.py:347).
  const SoftwareSpec lm21 = tiny({"software.preset=megatron-lm-2021"}).software;
  EXPECT_EQ(lm21.preset, "megatron-lm-2021");
  EXPECT_FALSE(lm21.grad_reduce_overlap);
  EXPECT_EQ(lm21.grad_reduce_dtype, GradDType::kFp32IfBf16);
  EXPECT_FALSE(lm21.overlap_param_gather);
  EXPECT_FALSE(lm21.tp_comm_overlap);
  EXPECT_TRUE(lm21.loss_scale_check);
  EXPECT_EQ(lm21.clip_grad, 1.0);
  EXPECT_TRUE(lm21.separate_master_copy);
  const SoftwareSpec lm22 = tiny({"software.preset=megatron-lm-2022"}).software;
  EXPECT_FALSE(lm22.grad_reduce_overlap);
  EXPECT_EQ(lm22.grad_reduce_dtype, GradDType::kFp32IfBf16);
  EXPECT_EQ(lm22.clip_grad, 1.0);
  // Megatron-Core r0.8: overlap_grad_reduce False by default, fp32 grads for bf16.
  const SoftwareSpec core = tiny({"software.preset=megatron-core-0.8"}).software;
  EXPECT_FALSE(core.grad_reduce_overlap);
  EXPECT_EQ(core.grad_reduce_dtype, GradDType::kFp32IfBf16);
  EXPECT_FALSE(core.overlap_param_gather);
  EXPECT_FALSE(core.tp_comm_overlap);
  EXPECT_EQ(core.clip_grad, 1.0);
  // DeepSpeed v0.5 pipeline engine: ReduceGrads after the schedule, fp32_allreduce False,
  // gradient_clipping 1.0 in the Megatron-DeepSpeed ZeRO-1 example.
  const SoftwareSpec ds = tiny({"software.preset=deepspeed-megatron-2021"}).software;
  EXPECT_FALSE(ds.grad_reduce_overlap);
  EXPECT_EQ(ds.grad_reduce_dtype, GradDType::kParam);
  EXPECT_TRUE(ds.loss_scale_check);
  EXPECT_EQ(ds.clip_grad, 1.0);
  // Every preset: 8 us of host dispatch a kernel (Torch-FL PR 27's measured PyTorch CUDA submit
  // cost, no CUDA graphs at these commits), the loss on logits.float() (fp16_lm_cross_entropy /
  // cross_entropy_loss_fusion off by default) and the fused bias-dropout-add (--no-bias-dropout-fusion
  // is a store_false flag).
  // Every preset's optimizer keeps an fp32 master and fp32 moments (main_param = ....clone().float():
  // Megatron-LM optimizer.py:247 / :254, core optimizer.py:507, DeepSpeed stage2.py:308-310).
  for (const SoftwareSpec& sw : {lm21, lm22, core, ds}) {
    EXPECT_EQ(sw.host_dispatch_us, 8.0) << sw.preset;
    EXPECT_TRUE(sw.cross_entropy_fp32) << sw.preset;
    EXPECT_TRUE(sw.bias_dropout_fusion) << sw.preset;
    EXPECT_EQ(sw.optimizer_state_dtype, OptimizerStateDType::kFp32) << sw.preset;
    EXPECT_EQ(sw.master_params, MasterParams::kFp32) << sw.preset;
  }
}

TEST(SoftwarePresets, DefaultIsMegatronCore) {
  const Scenario s = tiny({});
  EXPECT_EQ(s.software.preset, "megatron-core-0.8");
  EXPECT_EQ(s.grad_dtype(), DType::kFp32);  // tiny-gpt trains fp32
  EXPECT_EQ(tiny({"strategy.dtype=bf16"}).grad_dtype(), DType::kFp32);
  EXPECT_EQ(tiny({"strategy.dtype=fp16"}).grad_dtype(), DType::kFp16);
}

TEST(SoftwarePresets, FieldsOverrideThePreset) {
  const Scenario s = tiny({"software.preset=megatron-lm-2021", "software.clip_grad=0", "software.grad_reduce_overlap=true",
                           "software.grad_reduce_dtype=fp32"});
  EXPECT_EQ(s.software.clip_grad, 0.0);
  EXPECT_TRUE(s.software.grad_reduce_overlap);
  EXPECT_EQ(s.software.grad_reduce_dtype, GradDType::kFp32);
  EXPECT_TRUE(s.software.loss_scale_check);  // from the preset
}

TEST(SoftwarePresets, PresetFromAPath) {
  const Scenario s =
      tiny({"software.preset=" + std::string(TANDEM_SOURCE_DIR) + "/scenarios/software/megatron-lm-2022.textproto"});
  EXPECT_FALSE(s.software.grad_reduce_overlap);
  EXPECT_EQ(s.software.grad_reduce_dtype, GradDType::kFp32IfBf16);
}

TEST(SoftwarePresets, BadNamesAndFieldsSayTheChoices) {
  const std::string unknown = error_of({"software.preset=megatron-9"});
  EXPECT_TRUE(contains(unknown, "--set software.preset=megatron-9")) << unknown;
  EXPECT_TRUE(contains(unknown, "unknown preset \"megatron-9\"")) << unknown;
  EXPECT_TRUE(contains(unknown, "deepspeed-megatron-2021, megatron-core-0.8, megatron-lm-2021, megatron-lm-2022"))
      << unknown;
  const std::string field = error_of({"software.overlap_grads=true"});
  EXPECT_TRUE(contains(field, "unknown field \"overlap_grads\" in software")) << field;
  EXPECT_TRUE(contains(field, "grad_reduce_overlap")) << field;
  const std::string dtype = error_of({"software.grad_reduce_dtype=fp8"});
  EXPECT_TRUE(contains(dtype, "software.grad_reduce_dtype: unknown value \"fp8\"; expected one of: param, fp32, fp32-if-bf16"))
      << dtype;
  EXPECT_TRUE(contains(error_of({"software.clip_grad=-1"}), "software.clip_grad: must be >= 0"));
  EXPECT_TRUE(contains(error_of({"software.host_dispatch_us=-1"}), "software.host_dispatch_us: must be >= 0"));
  const std::string state = error_of({"software.optimizer_state_dtype=bf16"});
  EXPECT_TRUE(contains(state, "software.optimizer_state_dtype: unknown value \"bf16\"; expected one of: fp32, param"))
      << state;
  const std::string master = error_of({"software.master_params=half"});
  EXPECT_TRUE(contains(master, "software.master_params: unknown value \"half\"; expected one of: fp32, remainder, none"))
      << master;
}

// The optimizer's state against the dtype, the separate master copy and offload.
TEST(SoftwarePresets, OptimizerStateRules) {
  // Remainders are the 16 bits an fp32 keeps beyond bf16: fp16 params are refused, as Apex does.
  const std::string fp16 = error_of({"strategy.dtype=fp16", "software.master_params=remainder",
                                     "software.separate_master_copy=false"});
  EXPECT_TRUE(contains(fp16, "software.master_params: remainder keeps the 16 bits")) << fp16;
  EXPECT_TRUE(contains(fp16, "needs bf16 parameters")) << fp16;
  const std::string bf16_state = error_of({"strategy.dtype=bf16", "software.master_params=remainder",
                                           "software.optimizer_state_dtype=param", "software.separate_master_copy=false"});
  EXPECT_TRUE(contains(bf16_state, "needs optimizer_state_dtype fp32")) << bf16_state;
  // Without an fp32 master there is nothing to copy back: the separate copy is refused.
  const std::string copy = error_of({"strategy.dtype=bf16", "software.master_params=none"});
  EXPECT_TRUE(contains(copy, "software.separate_master_copy: the separate master copy")) << copy;
  // The host's Adam is fp32 only.
  const std::string off = error_of({"strategy.dtype=bf16", "strategy.offload=optimizer",
                                    "software.optimizer_state_dtype=param"});
  EXPECT_TRUE(contains(off, "software.optimizer_state_dtype: offload runs the host's Adam")) << off;
  // fp32 runs: the fields have nothing to change and are accepted.
  const Scenario fp32 = tiny({"software.master_params=none", "software.optimizer_state_dtype=param"});
  EXPECT_EQ(fp32.optimizer_state_dtype(), DType::kFp32);
  EXPECT_EQ(fp32.master_params(), MasterParams::kNone);
  const Scenario fp8 = tiny({"cluster.preset=dgx-h100", "strategy.dtype=fp8", "software.optimizer_state_dtype=param",
                             "software.master_params=none", "software.separate_master_copy=false"});
  EXPECT_EQ(fp8.optimizer_state_dtype(), DType::kBf16);  // the parameters' dtype, not fp8
}

// The deprecated strategy spellings still work for one release.
TEST(SoftwarePresets, DeprecatedStrategySpellings) {
  const Scenario s = tiny({"cluster.gpus=2", "strategy.tp=2", "strategy.sp_mode=megatron", "strategy.tp_comm_overlap=true"});
  EXPECT_TRUE(s.software.tp_comm_overlap);
  // Said once, in the scenario's notes (the programs print them; the library prints nothing).
  ASSERT_EQ(s.notes.size(), 1u);
  EXPECT_TRUE(contains(s.notes[0], "strategy.tp_comm_overlap is deprecated")) << s.notes[0];
  EXPECT_TRUE(contains(s.notes[0], "write software.tp_comm_overlap")) << s.notes[0];
  EXPECT_TRUE(tiny({"cluster.gpus=2", "strategy.tp=2", "strategy.sp_mode=megatron", "software.tp_comm_overlap=true"})
                  .notes.empty());
  const std::string bad = error_of({"strategy.overlap_param_gather=true"});
  EXPECT_TRUE(contains(bad, "strategy.overlap_param_gather: overlap_param_gather moves")) << bad;
  EXPECT_TRUE(contains(error_of({"software.overlap_param_gather=true"}), "software.overlap_param_gather: "));
}

// ---------------------------------------------------------------------------------------------
// The schedule.

struct Counts {
  std::vector<Collective> scalar;  // 4-byte fp32 all-reduces of the optimizer
  std::vector<int64_t> dp_bytes;   // data-parallel gradient reductions
  int last_backward_compute = -1;
  int first_dp_reduce = -1;
  // The first reduction depends on a compute-stream task at or after the last backward kernel
  // before it: no backend can start it before the backward has ended.
  bool first_dp_reduce_waits_for_the_backward = false;
  double adam_bytes = 0;
};

Counts count(const Schedule& s, int rank) {
  const Program p = s.program(rank);
  Counts c;
  for (const Task& t : p.tasks) {
    if (const auto* k = std::get_if<Compute>(&t.op)) {
      if (k->phase == Phase::kBackward && t.stream == Stream::kCompute) c.last_backward_compute = int(t.id);
      if (k->kernel == Kernel::kAdam) c.adam_bytes += k->bytes_moved();
    } else if (const auto* k = std::get_if<Collective>(&t.op)) {
      if (k->phase == Phase::kOptimizer && k->bytes == 4 && k->dtype == DType::kFp32 && k->buffers[0] != kNoId &&
          p.buffers[k->buffers[0]].name != "loss")
        c.scalar.push_back(*k);
      if (k->phase == Phase::kBackward && s.group(k->group).kind == GroupKind::kDp &&
          (k->op == CollectiveOp::kAllReduce || k->op == CollectiveOp::kReduceScatter)) {
        c.dp_bytes.push_back(k->bytes);
        if (c.first_dp_reduce < 0) {
          c.first_dp_reduce = int(t.id);
          for (TaskId d : t.deps)
            if (p.tasks[d].stream == Stream::kCompute && int(d) >= c.last_backward_compute)
              c.first_dp_reduce_waits_for_the_backward = true;
        }
      }
    }
  }
  return c;
}

// tiny-gpt: 4 layers, hidden 64, ffn 256, vocab 256, tied embeddings (shared/param_layout.h).
// Parameters: embedding 256*64 = 16384; per layer 4*64*64 (q, k, v, o) + 2*64*256 (fc1, fc2)
// + 4*64 (two LayerNorms) = 16384 + 32768 + 256 = 49408; final norm 128:
// 16384 + 4*49408 + 128 = 214144 per rank with dp only.
constexpr int64_t kTinyParams = 214144;

TEST(SoftwareSchedule, GradientDtypeIsTheReducedBytes) {
  // dp 2, one bucket of 25 MiB holds the whole model: the all-reduce moves every gradient.
  const Counts fp32 = count(Schedule(tiny({"cluster.gpus=2", "strategy.dtype=bf16"})), 0);
  ASSERT_EQ(fp32.dp_bytes.size(), 1u);
  EXPECT_EQ(fp32.dp_bytes[0], kTinyParams * 4);  // megatron-core-0.8: fp32 main_grad
  const Counts bf16 =
      count(Schedule(tiny({"cluster.gpus=2", "strategy.dtype=bf16", "software.grad_reduce_dtype=param"})), 0);
  ASSERT_EQ(bf16.dp_bytes.size(), 1u);
  EXPECT_EQ(bf16.dp_bytes[0], kTinyParams * 2);
}

TEST(SoftwareSchedule, LocalDdpReducesAfterTheBackward) {
  // 4 micro-batches, small buckets so that several are reduced: with overlap the first bucket's
  // reduction is issued while the last micro-batch's backward still has kernels to run; without
  // it (Megatron's local DDP), every reduction comes after the last backward kernel.
  const std::vector<std::string> base = {"cluster.gpus=2", "strategy.bucket_mb=0.1"};
  auto with = [&](const char* overlap) {
    std::vector<std::string> sets = base;
    sets.push_back(std::string("software.grad_reduce_overlap=") + overlap);
    return count(Schedule(tiny(sets)), 0);
  };
  const Counts overlapped = with("true"), after = with("false");
  ASSERT_GT(overlapped.dp_bytes.size(), 1u);
  EXPECT_EQ(overlapped.dp_bytes, after.dp_bytes);  // the same reductions
  EXPECT_LT(overlapped.first_dp_reduce, overlapped.last_backward_compute);
  EXPECT_GT(after.first_dp_reduce, after.last_backward_compute);
  // Issued after the backward is not enough: on its own stream the reduction would still start
  // when its bucket's gradients are written. The training loop issues it once the backward has
  // returned, behind every kernel queued before it (shared/grad_sync.cc sync_bucket).
  EXPECT_FALSE(overlapped.first_dp_reduce_waits_for_the_backward);
  EXPECT_TRUE(after.first_dp_reduce_waits_for_the_backward);
}

TEST(SoftwareSchedule, MegatronCoreBucketsOnlyTheFirstStage) {
  // pp 2 x dp 2, overlapped reduction, buckets of 0.1 MiB = 26214 fp32 elements: every tiny-gpt
  // layer (49408 parameters) closes a bucket of its own. Megatron-Core r0.8's DDP sets bucket_size
  // None on a pipeline rank above 0 (distributed_data_parallel.py:66-74 at baf94af3): the last
  // stage reduces its two layers as one bucket (2 * 49408 = 98816 fp32 gradients), issued after its
  // last backward kernel, beside the tied embedding copy's deferred all-reduce (16384 + the final
  // norm's 128, reduced after the backward either way). The first stage keeps one bucket a layer
  // (its embedding closing the last), the first issued inside the last micro-batch's backward.
  auto sched = [](const char* every) {
    return Schedule(tiny({"cluster.gpus=4", "strategy.pp=2", "strategy.bucket_mb=0.1",
                          "software.grad_reduce_overlap=true", std::string("software.bucket_every_stage=") + every}));
  };
  for (const char* every : {"false", "true"}) {
    const Schedule s = sched(every);
    for (int rank = 0; rank < 4; ++rank) {
      const Counts c = count(s, rank);
      const bool last_stage = s.grid().coord(rank).pp == 1;
      if (!last_stage || std::string(every) == "true") {
        // Bucketed: one reduction a layer (two on this stage) plus the first stage's embedding or
        // the last stage's tied copy; the first is issued during the backward.
        EXPECT_EQ(c.dp_bytes.size(), 3u) << every << " rank " << rank;
        EXPECT_LT(c.first_dp_reduce, c.last_backward_compute) << every << " rank " << rank;
        continue;
      }
      ASSERT_EQ(c.dp_bytes.size(), 2u) << "rank " << rank;
      EXPECT_EQ(c.dp_bytes[0], 98816 * 4) << "rank " << rank;  // the two layers, one bucket
      EXPECT_EQ(c.dp_bytes[1], (16384 + 128) * 4) << "rank " << rank;
      EXPECT_GT(c.first_dp_reduce, c.last_backward_compute) << "rank " << rank;
    }
  }
  // ZeRO-2/3 are not Megatron-Core's DDP: their later stages keep a bucket a layer (here the last
  // stage's two layers and its tied-copy bucket: 3), where ZeRO-1 has one bucket beside the copy.
  auto later_stage_buckets = [](const char* zero) {
    const Scenario sc = tiny({"cluster.gpus=4", "strategy.pp=2", "strategy.bucket_mb=0.1",
                              std::string("strategy.zero_stage=") + zero});
    return make_param_layout(sc, 1, 0).buckets.size();
  };
  EXPECT_EQ(later_stage_buckets("1"), 2u);
  EXPECT_EQ(later_stage_buckets("2"), 3u);
  // The preset says false; the other presets keep every stage bucketed.
  EXPECT_FALSE(tiny({"software.preset=megatron-core-0.8"}).software.bucket_every_stage);
  EXPECT_TRUE(tiny({"software.preset=megatron-lm-2022"}).software.bucket_every_stage);
}

// software.pipeline_send_wait: the sender's compute stream waits for its pipeline send (Megatron's
// batch_isend_irecv + req.wait(), DeepSpeed's synchronous broadcast). The tiny GPT in two 1F1B
// stages on the reference executor: layer kernels cost 1 (forward) and 2 (backward), a pipeline
// send or receive 0.5 from the moment both ends have reached it, everything else 0.
//  - stage 1 posts the receive of x0 at once (no compute before it), so stage 0's send of x0 meets
//    it when F0's last kernel has written x0, at end(F0), and ends at end(F0) + 0.5;
//  - waiting: stage 0's F1 (embedding first, no receive) starts when that send has ended,
//    end(F0) + 0.5; not waiting: at end(F0).
//  - the program: each sent buffer's Free is on the compute stream when waiting (ordered after its
//    send by the buffer), on the send stream otherwise; 4 forward sends (x0..x3) on stage 0 and
//    dx0..dx3 on stage 1.
TEST(SoftwareSchedule, PipelineSendWaitHoldsTheNextPass) {
  auto cost = [](int, const Program&, const Task& t) -> double {
    if (std::holds_alternative<SendRecv>(t.op)) return 0.5;
    const Compute* c = std::get_if<Compute>(&t.op);
    if (!c || c->layer < 0) return 0;
    return c->phase == Phase::kForward ? 1.0 : 2.0;
  };
  for (const char* wait : {"true", "false"}) {
    const Schedule s(tiny({"cluster.gpus=2", "strategy.pp=2", "strategy.pp_schedule=1f1b",
                           std::string("software.pipeline_send_wait=") + wait}));
    const bool waits = std::string(wait) == "true";
    const ReferenceRun run = run_reference(s, cost);
    const Program p0 = s.program(0);
    double f0_end = 0, f1_start = 1e30;
    for (TaskId id = 0; id < TaskId(p0.tasks.size()); ++id) {
      const Compute* c = std::get_if<Compute>(&p0.tasks[id].op);
      if (!c || c->phase != Phase::kForward || p0.tasks[id].stream != Stream::kCompute) continue;
      if (c->microbatch == 0) f0_end = std::max(f0_end, run.times[0][id].end_s);
      if (c->microbatch == 1) f1_start = std::min(f1_start, run.times[0][id].start_s);
    }
    EXPECT_GT(f0_end, 0) << wait;
    EXPECT_DOUBLE_EQ(f1_start, f0_end + (waits ? 0.5 : 0.0)) << wait;
    for (int rank = 0; rank < 2; ++rank) {
      const Program p = s.program(rank);
      std::vector<BufferId> sent;
      for (const Task& t : p.tasks)
        if (const SendRecv* m = std::get_if<SendRecv>(&t.op); m && m->is_send) sent.push_back(m->buffer);
      EXPECT_EQ(sent.size(), 4u) << wait << " rank " << rank;
      int on_compute = 0;
      for (const Task& t : p.tasks)
        if (const Free* f = std::get_if<Free>(&t.op))
          for (BufferId b : sent) on_compute += f->buffer == b && t.stream == Stream::kCompute;
      EXPECT_EQ(on_compute, waits ? 4 : 0) << wait << " rank " << rank;
    }
  }
  // Interleaved, 4 stages x 2 chunks of one layer (8 layers), 4 micro-batches: stage s holds
  // virtual stages s and s + 4. A middle stage sends 4 activations and 4 gradients from each chunk
  // (16); stage 0 no gradient from virtual stage 0 (12), stage 3 no activation from virtual stage 7
  // (12). Every sent buffer is waited for on the compute stream under both pairings (per direction
  // with overlap_p2p_comm, per forward/backward pair without), and the run completes.
  for (const char* overlap : {"true", "false"}) {
    const Schedule s(tiny({"model.layers=8", "cluster.gpus=4", "strategy.pp=4", "strategy.pp_schedule=interleaved",
                           "strategy.virtual_stages=2", "software.pipeline_send_wait=true",
                           std::string("software.overlap_p2p_comm=") + overlap}));
    EXPECT_NO_THROW(run_reference(s, cost)) << overlap;
    // The shape of Korthikanti's 175B row (8 stages x 3 chunks, 64 micro-batches) runs too: without
    // the receives posted ahead it deadlocked (checked on 74d2f6d).
    const Schedule k(tiny({"model.layers=24", "cluster.gpus=8", "strategy.pp=8", "strategy.pp_schedule=interleaved",
                           "strategy.virtual_stages=3", "strategy.global_batch=128", "software.pipeline_send_wait=true",
                           std::string("software.overlap_p2p_comm=") + overlap}));
    EXPECT_NO_THROW(run_reference(k, cost)) << overlap;
    for (int rank = 0; rank < 4; ++rank) {
      const int expected = rank == 0 || rank == 3 ? 12 : 16;
      const Program p = s.program(rank);
      int sends = 0, frees_on_compute = 0;
      for (const Task& t : p.tasks) {
        if (const SendRecv* m = std::get_if<SendRecv>(&t.op); m && m->is_send) ++sends;
        if (const Free* f = std::get_if<Free>(&t.op); f && t.stream == Stream::kCompute)
          for (const Task& u : p.tasks)
            if (const SendRecv* m = std::get_if<SendRecv>(&u.op); m && m->is_send && m->buffer == f->buffer)
              ++frees_on_compute;
      }
      EXPECT_EQ(sends, expected) << overlap << " rank " << rank;
      EXPECT_EQ(frees_on_compute, expected) << overlap << " rank " << rank;
    }
  }
  // Two stages with one exchange a pair: refused, as Megatron refuses it.
  const std::string refused = error_of({"cluster.gpus=2", "strategy.pp=2", "strategy.pp_schedule=interleaved",
                                        "strategy.virtual_stages=2", "software.preset=megatron-lm-2022"});
  EXPECT_NE(refused.find("software.overlap_p2p_comm"), std::string::npos) << refused;
  // Every preset waits (docs/software.md); Megatron-Core's interleaved waits per direction.
  for (const char* preset : {"megatron-lm-2021", "megatron-lm-2022", "megatron-core-0.8", "deepspeed-megatron-2021"})
    EXPECT_TRUE(tiny({std::string("software.preset=") + preset}).software.pipeline_send_wait) << preset;
  EXPECT_TRUE(tiny({"software.preset=megatron-core-0.8"}).software.overlap_p2p_comm);
  EXPECT_FALSE(tiny({"software.preset=megatron-lm-2022"}).software.overlap_p2p_comm);
}

// The tiny GPT in tp 2 x pp 2, 1F1B, fp16 under software preset `preset`, with `extra` settings.
Schedule tp2_pp2(const std::string& preset, const std::vector<std::string>& extra) {
  std::vector<std::string> sets = {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2", "strategy.pp_schedule=1f1b",
                                   "strategy.dtype=fp16", "software.preset=" + preset};
  sets.insert(sets.end(), extra.begin(), extra.end());
  return Schedule(tiny(sets));
}

// A pipeline message's gather: a tensor-group all-gather from a view of its output buffer.
bool gathers_a_slice(const Schedule& s, const Program& p, const Collective* c) {
  return c != nullptr && c->op == CollectiveOp::kAllGather && s.group(c->group).kind == GroupKind::kTp &&
         c->buffers.size() == 2 && p.buffers[c->buffers[0]].view_of == c->buffers[1];
}

// software.pipeline_scatter_gather: Megatron-LM v3.0 (megatron/p2p_communication.py:63-73,
// :96-103, :142-157 at d898a8991d1a08d29074f87819d1bf41517e35f5) sends each pipeline message as
// this tensor rank's 1/tp slice of its elements (split_tensor_into_1d_equal_chunks, a view:
// megatron/mpu/random.py:72-85) unless sequence parallelism already split it, and the receiver
// all-gathers the slices over its tensor group (gather_split_1d_tensor, random.py:88-101).
// tiny-gpt, fp16, tp 2 x pp 2, 1F1B, micro-batch 2 x seq 32 = 64 tokens of hidden 64: a message is
// 64 x 64 x 2 B = 8192 B; sliced, each rank sends 8192 / 2 = 4096 B at offset tp_rank x 4096 and the
// receiver gathers 8192 B (a collective's bytes are its output's). 4 micro-batches: stage 0 sends 4
// activations and gathers 4 gradients (backward), stage 1 the reverse. With Megatron-SP the message
// is the rank's sequence shard, 32 x 64 x 2 = 4096 B, sent whole and not gathered.
TEST(SoftwareSchedule, PipelineScatterGatherSendsATensorSlice) {
  struct Seen {
    std::vector<int64_t> sent, offsets;   // send bytes, and the sent view's offset in its buffer
    std::vector<int64_t> gathered;        // tensor-group all-gathers of a received message
    std::vector<Phase> gather_phase;
  };
  auto seen = [](const std::vector<std::string>& extra, int rank) {
    const Schedule s = tp2_pp2("megatron-lm-2022", extra);
    const Program p = s.program(rank);
    Seen out;
    for (const Task& t : p.tasks) {
      if (const SendRecv* m = std::get_if<SendRecv>(&t.op); m && m->is_send) {
        out.sent.push_back(m->bytes);
        out.offsets.push_back(p.buffers[m->buffer].view_of == kNoId ? -1 : p.buffers[m->buffer].view_offset_bytes);
      }
      if (const Collective* c = std::get_if<Collective>(&t.op); gathers_a_slice(s, p, c)) {
        out.gathered.push_back(c->bytes);
        out.gather_phase.push_back(c->phase);
      }
    }
    return out;
  };
  // Ranks: tp is the fastest axis, so rank 1 is stage 0's second tensor rank, rank 2 stage 1's first.
  for (int rank : {0, 1, 2, 3}) {
    const Seen on = seen({}, rank);
    const bool first_stage = rank < 2;
    const int64_t tp_rank = rank % 2;
    ASSERT_EQ(on.sent.size(), 4u) << rank;
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(on.sent[i], 4096) << rank;
      EXPECT_EQ(on.offsets[i], tp_rank * 4096) << rank;
    }
    ASSERT_EQ(on.gathered.size(), 4u) << rank;
    for (size_t i = 0; i < 4; ++i) {
      EXPECT_EQ(on.gathered[i], 8192) << rank;
      EXPECT_EQ(on.gather_phase[i], first_stage ? Phase::kBackward : Phase::kForward) << rank;
    }
    const Seen off = seen({"software.pipeline_scatter_gather=false"}, rank);
    EXPECT_EQ(off.sent, std::vector<int64_t>(4, 8192)) << rank;
    EXPECT_TRUE(off.gathered.empty()) << rank;
    const Seen sp = seen({"strategy.sp_mode=megatron"}, rank);
    EXPECT_EQ(sp.sent, std::vector<int64_t>(4, 4096)) << rank;
    EXPECT_EQ(sp.offsets, std::vector<int64_t>(4, -1)) << rank;
    EXPECT_TRUE(sp.gathered.empty()) << rank;
  }
  // The presets: Megatron-LM v2.5 and v3.0 on by default (a store_false flag); Megatron-Core r0.8's
  // p2p_communication.py has no slicing; DeepSpeed's preset leaves it off.
  EXPECT_TRUE(tiny({"software.preset=megatron-lm-2021"}).software.pipeline_scatter_gather);
  EXPECT_TRUE(tiny({"software.preset=megatron-lm-2022"}).software.pipeline_scatter_gather);
  EXPECT_FALSE(tiny({"software.preset=megatron-core-0.8"}).software.pipeline_scatter_gather);
  EXPECT_FALSE(tiny({"software.preset=deepspeed-megatron-2021"}).software.pipeline_scatter_gather);
}

// software.pipeline_partitioned_tensor: DeepSpeed's PipelineEngine at v0.5.4
// (bc7778ea5b6018c4982816a1bf4d11fb46eb111f; docs/software.md) with tp > 1 sends every activation
// and gradient as PartitionedTensor(to_meta(), data()): a meta message (a long tensor
// [ndims, *size, num_parts, rank, *partition], deepspeed/runtime/utils.py:723-738) and a clone of
// this rank's 1/tp of the elements (utils.py:682-692), each a synchronous p2p.send
// (pipe/engine.py:867-871, :913-916); the receiver all-gathers before its pass (:565-574, :664-670,
// utils.py:693-721); the stage that sent an activation keeps only its slice and all-gathers its
// output back before that micro-batch's backward (:650-657).
// tiny-gpt fp16, tp 2 x pp 2, 1F1B, 4 micro-batches of 2 x 32 = 64 tokens of hidden 64:
//  - a message is 64 x 64 x 2 B = 8192 B; its slice 8192 / 2 = 4096 B, a buffer of its own (not a
//    view: the clone), copied from the message on the device; meta 8 x (1 + 3 + 2 + 2 + 1) = 72 B;
//  - every send is [72, 4096] a message: stage 0's 4 activations, stage 1's 4 gradients; every
//    receive the same;
//  - tensor-group all-gathers of 8192 B into the received or rebuilt buffer: stage 1 gathers 4
//    activations (forward phase); stage 0 gathers 4 gradients and rebuilds 4 outputs (backward);
//  - device copies: one clone per send (4 each stage) and, on stage 0, the kept slice copied into
//    its place of the rebuilt output (4);
//  - the field off: 8192 B sends, no gathers, no copies added (what the preset did before).
// Megatron's scatter/gather with it is refused; the preset sets it.
TEST(SoftwareSchedule, DeepSpeedPartitionedTensorSendsMetaAndASlice) {
  struct Seen {
    std::vector<int64_t> sent, received, sent_offsets;
    std::vector<int64_t> gathered;
    std::vector<Phase> gather_phase;
    int copies = 0;
  };
  auto seen = [](const std::vector<std::string>& extra, int rank) {
    const Schedule s = tp2_pp2("deepspeed-megatron-2021", extra);
    const Program p = s.program(rank);
    Seen out;
    for (const Task& t : p.tasks) {
      if (const SendRecv* m = std::get_if<SendRecv>(&t.op)) {
        (m->is_send ? out.sent : out.received).push_back(m->bytes);
        if (m->is_send) out.sent_offsets.push_back(p.buffers[m->buffer].view_of == kNoId ? -1 : 0);
      }
      if (const Copy* c = std::get_if<Copy>(&t.op); c && c->direction == CopyDirection::kD2D) ++out.copies;
      if (const Collective* c = std::get_if<Collective>(&t.op); gathers_a_slice(s, p, c)) {
        out.gathered.push_back(c->bytes);
        out.gather_phase.push_back(c->phase);
      }
    }
    return out;
  };
  std::vector<int64_t> pairs;
  for (int i = 0; i < 4; ++i) pairs.insert(pairs.end(), {72, 4096});
  for (int rank : {0, 1, 2, 3}) {
    const bool first_stage = rank < 2;
    const Seen on = seen({}, rank);
    const Seen off = seen({"software.pipeline_partitioned_tensor=false"}, rank);
    EXPECT_EQ(on.sent, pairs) << rank;
    EXPECT_EQ(on.received, pairs) << rank;
    EXPECT_EQ(on.sent_offsets, std::vector<int64_t>(8, -1)) << rank;
    EXPECT_EQ(on.gathered, std::vector<int64_t>(first_stage ? 8 : 4, 8192)) << rank;
    for (Phase ph : on.gather_phase) EXPECT_EQ(ph, first_stage ? Phase::kBackward : Phase::kForward) << rank;
    EXPECT_EQ(on.copies - off.copies, first_stage ? 8 : 4) << rank;
    EXPECT_EQ(off.sent, std::vector<int64_t>(4, 8192)) << rank;
    EXPECT_TRUE(off.gathered.empty()) << rank;
  }
  // The program runs on the reference executor (every message matched, no buffer used freed).
  EXPECT_NO_THROW(run_reference(tp2_pp2("deepspeed-megatron-2021", {}), [](int, const Program&, const Task&) { return 1.0; }));
  const std::string both = error_of({"software.preset=megatron-lm-2022", "software.pipeline_partitioned_tensor=true"});
  EXPECT_TRUE(contains(both, "software.pipeline_partitioned_tensor")) << both;
  EXPECT_TRUE(tiny({"software.preset=deepspeed-megatron-2021"}).software.pipeline_partitioned_tensor);
  EXPECT_FALSE(tiny({"software.preset=megatron-lm-2022"}).software.pipeline_partitioned_tensor);
}

TEST(SoftwareSchedule, OptimizerAllReducesOverTheModelParallelGroup) {
  // tp 2 x pp 2 x dp 2, fp16, Megatron-LM 2021: found-inf (max) then norm (sum), each over the
  // tensor group, then the pipeline group: 4 all-reduces of 4 bytes (optimizer.py:338,
  // clip_grads.py:106). No ZeRO: the data-parallel group is not in it.
  const std::vector<std::string> grid = {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=2"};
  auto sets = [&](std::vector<std::string> more) {
    std::vector<std::string> all = grid;
    all.insert(all.end(), more.begin(), more.end());
    return all;
  };
  const Schedule lm21(tiny(sets({"strategy.dtype=fp16", "software.preset=megatron-lm-2021"})));
  const Counts c = count(lm21, 0);
  ASSERT_EQ(c.scalar.size(), 4u);
  const GroupKind kinds[] = {GroupKind::kTp, GroupKind::kPp, GroupKind::kTp, GroupKind::kPp};
  const ReduceOp ops[] = {ReduceOp::kMax, ReduceOp::kMax, ReduceOp::kSum, ReduceOp::kSum};
  for (size_t i = 0; i < 4; ++i) {
    EXPECT_EQ(lm21.group(c.scalar[i].group).kind, kinds[i]) << i;
    EXPECT_EQ(c.scalar[i].reduce, ops[i]) << i;
  }
  // bf16 has no loss scale: the norm alone. clip_grad 0: nothing.
  EXPECT_EQ(count(Schedule(tiny(sets({"strategy.dtype=bf16"}))), 0).scalar.size(), 2u);
  EXPECT_EQ(count(Schedule(tiny(sets({"strategy.dtype=bf16", "software.clip_grad=0"}))), 0).scalar.size(), 0u);
  // A sharded optimizer (ZeRO-1) adds the data-parallel group to each.
  EXPECT_EQ(count(Schedule(tiny(sets({"strategy.dtype=fp16", "strategy.zero_stage=1"}))), 0).scalar.size(), 6u);
}

// The tasks `t` waits for, directly or not: its deps and the task before it on its stream.
std::vector<bool> ancestors(const Program& p, TaskId t) {
  std::vector<bool> seen(p.tasks.size(), false);
  std::vector<TaskId> todo = {t};
  while (!todo.empty()) {
    const Task& x = p.tasks[size_t(todo.back())];
    todo.pop_back();
    std::vector<TaskId> before = x.deps;
    for (size_t i = x.id; i-- > 0;)
      if (p.tasks[i].stream == x.stream) {
        before.push_back(TaskId(i));
        break;
      }
    for (TaskId b : before)
      if (!seen[size_t(b)]) {
        seen[size_t(b)] = true;
        todo.push_back(b);
      }
  }
  return seen;
}

TEST(SoftwareSchedule, EveryAdamWaitsForTheGradientNorm) {
  // Clipping scales every gradient by the global norm before the step (Megatron's
  // clip_grads.py:106, ColossalAI's HybridAdam likewise takes the clipped gradients), so every
  // Adam — on the device's compute stream or on the host's — starts after the last norm
  // all-reduce. Session 8's host Adam (offload optimizer, Adam of every chunk on the host after
  // the first) waited only for its gradient's copy; a device Adam after a host chunk's step did not
  // wait at all. ZeRO-3 over 2 ranks: the norm is all-reduced over the data-parallel group.
  const std::vector<std::string> chunks = {"strategy.chunk_min_m=0", "strategy.chunk_search_range_m=0"};
  auto with = [&](std::vector<std::string> a, bool chunked) {
    a.insert(a.end(), {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.dtype=bf16", "software.clip_grad=1"});
    if (chunked) a.insert(a.end(), chunks.begin(), chunks.end());
    return a;
  };
  const std::vector<std::vector<std::string>> configs = {
      with({}, false),
      with({"strategy.offload=optimizer"}, false),
      with({"strategy.offload=params", "strategy.offload_fraction=0.5"}, true),
      with({"strategy.offload=auto"}, true),
      with({"strategy.offload=auto", "cluster.hbm_gib=0.003"}, true),
  };
  for (const std::vector<std::string>& sets : configs) {
    const Schedule s(tiny(sets));
    for (int rank = 0; rank < 2; ++rank) {
      const Program p = s.program(rank);
      TaskId norm = kNoId;
      int adams = 0;
      for (const Task& t : p.tasks)
        if (const auto* c = std::get_if<Collective>(&t.op))
          if (c->phase == Phase::kOptimizer && c->buffers[0] != kNoId && p.buffers[c->buffers[0]].name == "grad_norm_sq")
            norm = t.id;
      ASSERT_NE(norm, kNoId) << sets.front();
      for (const Task& t : p.tasks)
        if (const auto* c = std::get_if<Compute>(&t.op); c && c->kernel == Kernel::kAdam) {
          ++adams;
          EXPECT_TRUE(ancestors(p, t.id)[size_t(norm)])
              << sets.front() << " rank " << rank << ": Adam task " << t.id << " on " << to_string(t.stream);
        }
      EXPECT_GT(adams, 0) << sets.front();
    }
  }
}

TEST(SoftwareSchedule, OptimizerStepBytes) {
  // Megatron-LM 2021, fp16 (p = g = 2): Adam 24 + reads fp32 main grads 4 + cast 2+4 + copy back
  // 4+2 + unscale 8 + norm 4 = 52 bytes a parameter.
  EXPECT_EQ(optimizer_bytes_per_element(tiny({"strategy.dtype=fp16", "software.preset=megatron-lm-2021"})), 52);
  // Megatron-Core 0.8, bf16 with fp32 main_grad: no cast, no unscale: 24 + 4 + 4+2 + 4 = 38.
  EXPECT_EQ(optimizer_bytes_per_element(tiny({"strategy.dtype=bf16"})), 38);
  // fp32 training: no master copy, no cast: 24 + 4 (grad) + 4 (param) + 4 (norm) = 36.
  EXPECT_EQ(optimizer_bytes_per_element(tiny({})), 36);
  // The bare schedule: 2p + 24, Kernel::kAdam's cost without dims[2].
  Scenario bare = tiny({"strategy.dtype=bf16"});
  bare.software = SoftwareSpec{};
  EXPECT_EQ(optimizer_bytes_per_element(bare), 28);
  // Apex DistributedFusedAdam (NeMo), bf16 with bf16 grads, no separate copy (s = 4, p = g = 2):
  // remainders: m, v 16 + parameter and remainder read and written 2*2 + 4 + grad 2 + norm 4 = 30;
  // bf16 moments, no master (s = 2): 8 + 2*2 + 2 + 4 = 18.
  const std::vector<std::string> apex = {"strategy.dtype=bf16", "software.grad_reduce_dtype=param",
                                         "software.separate_master_copy=false"};
  std::vector<std::string> rem = apex, none = apex;
  rem.push_back("software.master_params=remainder");
  none.insert(none.end(), {"software.master_params=none", "software.optimizer_state_dtype=param"});
  EXPECT_EQ(optimizer_bytes_per_element(tiny(rem)), 30);
  EXPECT_EQ(optimizer_bytes_per_element(tiny(none)), 18);
  // The same with an fp32 master (Adam writes the parameter): 16 + 8 + 2 + 2 + 4 = 32.
  EXPECT_EQ(optimizer_bytes_per_element(tiny(apex)), 32);
  // The Adam tasks of one rank carry it: every parameter once (dp 1, no ZeRO).
  const Counts c = count(Schedule(tiny({"strategy.dtype=fp16", "software.preset=megatron-lm-2021"})), 0);
  EXPECT_DOUBLE_EQ(c.adam_bytes, double(kTinyParams) * 52);
}

// The compute tasks of rank 0 with kernel k, in program order.
std::vector<Compute> kernels_of(const Schedule& s, Kernel k) {
  std::vector<Compute> out;
  for (const Task& t : s.program(0).tasks)
    if (const auto* c = std::get_if<Compute>(&t.op); c && c->kernel == k) out.push_back(*c);
  return out;
}

TEST(SoftwareSchedule, CrossEntropyOnAnFp32Copy) {
  // tiny-gpt, bf16: 2 x 32 = 64 tokens a micro-batch, vocab 256: 16384 logits. On the fp32 copy
  // (bytes a logit, shared/schedule_types.cc cross_entropy_bytes from Megatron's
  // cross_entropy.py): max 2 + 8, sum-exp 20, loss 16 a token + 8 a logit, backward 12 + 2; the
  // target gather 16 a token. In bf16: 2 a logit for max, sum-exp, target; 4 backward.
  const double cells = 64.0 * 256, rows = 64;
  const Schedule fp32(tiny({"strategy.dtype=bf16"}));
  const Schedule bf16(tiny({"strategy.dtype=bf16", "software.cross_entropy_fp32=false"}));
  const std::pair<Kernel, std::pair<double, double>> expected[] = {
      {Kernel::kCrossEntropyMax, {10 * cells, 2 * cells}},
      {Kernel::kCrossEntropySumExp, {20 * cells, 2 * cells}},
      {Kernel::kCrossEntropyTarget, {16 * rows, 2 * cells}},
      {Kernel::kCrossEntropyLoss, {16 * rows + 8 * cells, 16 * rows}},
      {Kernel::kCrossEntropyBwd, {14 * cells, 4 * cells}},
  };
  for (const auto& [k, bytes] : expected) {
    const std::vector<Compute> a = kernels_of(fp32, k), b = kernels_of(bf16, k);
    ASSERT_EQ(a.size(), 4u) << to_string(k);  // one a micro-batch
    ASSERT_EQ(b.size(), 4u) << to_string(k);
    EXPECT_EQ(a[0].dims[4], 1) << to_string(k);
    EXPECT_EQ(b[0].dims[4], 0) << to_string(k);
    EXPECT_DOUBLE_EQ(a[0].bytes_moved(), bytes.first) << to_string(k);
    EXPECT_DOUBLE_EQ(b[0].bytes_moved(), bytes.second) << to_string(k);
  }
  // The fp32 copy is memory: 16384 x 4 bytes a micro-batch, from the loss's forward to its backward.
  int copies = 0;
  for (const Buffer& b : fp32.program(0).buffers)
    if (b.name.find("logits_fp32") != std::string::npos) {
      EXPECT_EQ(b.bytes, int64_t(cells) * 4);
      ++copies;
    }
  EXPECT_EQ(copies, 4);
  for (const Buffer& b : bf16.program(0).buffers) EXPECT_EQ(b.name.find("logits_fp32"), std::string::npos);
}

TEST(SoftwareSchedule, CrossEntropyOnAnFp32CopyIn2dTensorParallelism) {
  // The 2D head (shared/tp2d_embedding_head.cc), tp 4 as a 2 x 2 grid: each rank holds the logits
  // of half the 64 tokens of a micro-batch over the whole 256-entry vocabulary (the table gathered,
  // the logits all-reduced over the row): 32 x 256 = 8192 logits; the same bytes a logit as the 1D
  // head (CrossEntropyOnAnFp32Copy), and the fp32 copy's memory.
  const std::vector<std::string> base = {"cluster.gpus=4", "strategy.tp=4", "strategy.tp_mode=2d",
                                         "strategy.dtype=bf16"};
  std::vector<std::string> off = base;
  off.push_back("software.cross_entropy_fp32=false");
  const Schedule fp32(tiny(base)), bf16(tiny(off));
  const double cells = 32.0 * 256;
  const std::pair<Kernel, std::pair<double, double>> expected[] = {
      {Kernel::kCrossEntropyMax, {10 * cells, 2 * cells}},
      {Kernel::kCrossEntropySumExp, {20 * cells, 2 * cells}},
      {Kernel::kCrossEntropyBwd, {14 * cells, 4 * cells}},
  };
  for (const auto& [k, bytes] : expected) {
    const std::vector<Compute> a = kernels_of(fp32, k), b = kernels_of(bf16, k);
    ASSERT_EQ(a.size(), 4u) << to_string(k);
    ASSERT_EQ(b.size(), 4u) << to_string(k);
    EXPECT_EQ(a[0].dims[0], 32) << to_string(k);
    EXPECT_EQ(a[0].dims[1], 256) << to_string(k);
    EXPECT_EQ(a[0].dims[4], 1) << to_string(k);
    EXPECT_EQ(b[0].dims[4], 0) << to_string(k);
    EXPECT_DOUBLE_EQ(a[0].bytes_moved(), bytes.first) << to_string(k);
    EXPECT_DOUBLE_EQ(b[0].bytes_moved(), bytes.second) << to_string(k);
  }
  int copies = 0;
  for (const Buffer& b : fp32.program(0).buffers)
    if (b.name.find("logits_fp32") != std::string::npos) {
      EXPECT_EQ(b.bytes, int64_t(cells) * 4);
      ++copies;
    }
  EXPECT_EQ(copies, 4);
  for (const Buffer& b : bf16.program(0).buffers) EXPECT_EQ(b.name.find("logits_fp32"), std::string::npos);
}

TEST(SoftwareSchedule, BiasDropoutAddFused) {
  // tiny-gpt, bf16, dropout 0.1: the residual dropout of each block is fused into its add. A
  // micro-batch's residual stream is 64 tokens x 64 = 4096 elements: fused, the dropout reads the
  // branch and writes the mask (2 + 1 bytes an element) and the add reads the residual and writes
  // the sum (2 + 2): 7 bytes, Megatron's jit-fused kernel (x, residual in; out, mask out). Unfused:
  // dropout 2 + 2 + 1, add 3 x 2: 11 bytes.
  const double n = 64.0 * 64;
  const Schedule fused(tiny({"strategy.dtype=bf16", "model.dropout=0.1"}));
  const Schedule apart(tiny({"strategy.dtype=bf16", "model.dropout=0.1", "software.bias_dropout_fusion=false"}));
  auto residual_dropouts = [&](const Schedule& s) {
    std::vector<Compute> out;
    for (const Compute& c : kernels_of(s, Kernel::kDropout))
      if (c.dims[0] == int64_t(n)) out.push_back(c);
    return out;
  };
  const std::vector<Compute> fd = residual_dropouts(fused), ad = residual_dropouts(apart);
  // 4 layers x 2 blocks x 4 micro-batches (the embedding's dropout is not a residual one).
  ASSERT_EQ(fd.size(), 32u);
  ASSERT_EQ(ad.size(), 32u);
  EXPECT_EQ(fd[0].flags & kFusedIntoNext, kFusedIntoNext);
  EXPECT_EQ(ad[0].flags & kFusedIntoNext, 0);
  EXPECT_DOUBLE_EQ(fd[0].bytes_moved(), 3 * n);
  EXPECT_DOUBLE_EQ(ad[0].bytes_moved(), 5 * n);
  std::vector<Compute> fa, aa;
  for (const Compute& c : kernels_of(fused, Kernel::kAdd))
    if (c.flags & kFusedFromPrev) fa.push_back(c);
  for (const Compute& c : kernels_of(apart, Kernel::kAdd))
    if (c.flags & kFusedFromPrev) aa.push_back(c);
  ASSERT_EQ(fa.size(), 32u);
  EXPECT_TRUE(aa.empty());
  EXPECT_DOUBLE_EQ(fa[0].bytes_moved(), 4 * n);
  // Without dropout there is nothing to fuse: a plain add, as Megatron-Core's bias-dropout-add at p 0.
  for (const Compute& c : kernels_of(Schedule(tiny({"strategy.dtype=bf16"})), Kernel::kAdd))
    EXPECT_EQ(c.flags & (kFusedIntoNext | kFusedFromPrev), 0);
}

}  // namespace
}  // namespace tandem
