// Sequence parallelism over the sp axis (shared/ulysses.h, shared/ring_attention.h): every
// combination the host runs is a valid schedule (sends matched, collectives ordered, no deadlock
// under the reference executor), and each method moves its closed-form volume per layer and
// micro-batch on each rank:
//  - DeepSpeed-Ulysses (Jacobs et al. 2023, arXiv 2309.14509, section 3.2): per layer, four
//    all-to-alls forward (Q, K, V and the output; here Q, K, V in one) and four backward, each of a
//    rank's b*(s/P)*h-element share (h_kv for K and V); an all-to-all sends (P-1)/P of it.
//  - Ring attention (Megatron-Core context parallelism through Transformer Engine's
//    AttnFuncWithCPAndKVP2P; Colossal-AI's ring_attn, ../shared/notes/colossalai-techniques.md):
//    P-1 transfers of the K/V block b*(s/P)*2 h_kv forward; backward P-1 K/V transfers plus P
//    transfers of the dK/dV block in fp32.
// tiny-gpt: 4 layers, hidden 64, 4 heads of 16, seq 32, micro-batch 2, 4 micro-batches, fp32.
#include <gtest/gtest.h>

#include <map>

#include "shared/memory_timeline.h"
#include "shared/plan_summary.h"
#include "shared/schedule.h"
#include "shared/schedule_validator.h"
#include "tests/shared/schedule_test_util.h"

namespace tandem {
namespace {

using testing::tiny;

struct Volume {
  std::map<std::pair<int, int>, int64_t> a2a_bytes;  // (layer, phase) -> summed "bytes" of all-to-alls
  int64_t a2a_count = 0;
  std::map<int, int64_t> sends, send_bytes;  // tag -> count, bytes
};

Volume volume(const Schedule& s, int rank, int mb) {
  Volume v;
  const Program p = s.program(rank);
  for (const Task& t : p.tasks) {
    if (const auto* c = std::get_if<Collective>(&t.op); c && c->op == CollectiveOp::kAllToAll && c->microbatch == mb) {
      v.a2a_bytes[{c->layer, int(c->phase)}] += c->bytes;
      ++v.a2a_count;
      EXPECT_EQ(s.group(c->group).kind, GroupKind::kSp);
    }
    if (const auto* m = std::get_if<SendRecv>(&t.op); m && m->is_send && m->tag >= 3 && m->microbatch == mb) {
      ++v.sends[m->tag];
      v.send_bytes[m->tag] += m->bytes;
    }
  }
  return v;
}

TEST(SequenceParallel, SchedulesAreValid) {
  for (const char* mode : {"ulysses", "ring_attention", "ring"})
    for (std::vector<std::string> sets : {std::vector<std::string>{"cluster.gpus=2", "strategy.sp=2"},
                                          {"cluster.gpus=4", "strategy.sp=4"},
                                          {"cluster.gpus=4", "strategy.sp=2"},
                                          {"cluster.gpus=4", "strategy.sp=2", "strategy.tp=2"},
                                          {"cluster.gpus=4", "strategy.sp=2", "strategy.pp=2"},
                                          {"cluster.gpus=4", "strategy.sp=2", "strategy.zero_stage=3"},
                                          {"cluster.gpus=2", "strategy.sp=2", "strategy.recompute=full"}}) {
      if (std::string(mode) == "ring" && sets.back() == "strategy.tp=2") continue;  // ring runs with tp 1
      sets.push_back(std::string("strategy.sp_mode=") + mode);
      const Schedule s(tiny(sets));
      const std::vector<std::string> problems = validate_schedule(s);
      EXPECT_TRUE(problems.empty()) << mode << " " << sets[1] << ": " << problems.front();
    }
}

TEST(SequenceParallel, UlyssesAllToAllVolumeIsTheClosedForm) {
  // sp 2, MHA: per layer and direction 4 * b*(s/P)*h elements = 4 * 2*16*64 * 4 bytes.
  const Schedule s(tiny({"cluster.gpus=2", "strategy.sp=2", "strategy.sp_mode=ulysses"}));
  const Volume v = volume(s, 1, 0);
  EXPECT_EQ(v.a2a_count, 4 * 2 * 2);  // 4 layers, (QKV, out) forward and (dout, dQKV) backward
  for (int layer = 0; layer < 4; ++layer)
    for (Phase ph : {Phase::kForward, Phase::kBackward}) EXPECT_EQ(v.a2a_bytes.at({layer, int(ph)}), 4 * 2 * 16 * 64 * 4);
  // Grouped-query attention, 4 heads over 2 kv heads, sp 2: Q and the output b*(s/P)*h each,
  // K and V b*(s/P)*h/2 each: 3 * b*(s/P)*h.
  const Schedule g(tiny({"cluster.gpus=2", "strategy.sp=2", "strategy.sp_mode=ulysses", "model.kv_heads=2"}));
  EXPECT_EQ(volume(g, 0, 0).a2a_bytes.at({0, int(Phase::kForward)}), 3 * 2 * 16 * 64 * 4);
  // With tp 2 each tensor rank exchanges its half of the heads.
  const Schedule t(tiny({"cluster.gpus=4", "strategy.sp=2", "strategy.tp=2", "strategy.sp_mode=ulysses"}));
  EXPECT_EQ(volume(t, 3, 0).a2a_bytes.at({2, int(Phase::kBackward)}), 4 * 2 * 16 * 32 * 4);
}

TEST(SequenceParallel, RingAttentionP2pVolumeIsTheClosedForm) {
  for (int sp : {2, 4}) {
    const Schedule s(tiny({"cluster.gpus=" + std::to_string(sp), "strategy.sp=" + std::to_string(sp),
                           "strategy.sp_mode=ring_attention"}));
    const int64_t block = 2 * (32 / sp) * 2 * 64;  // b*(s/P)*2 h_kv elements
    for (int rank = 0; rank < sp; ++rank) {
      const Volume v = volume(s, rank, 1);
      EXPECT_EQ(v.sends.at(3), 4 * 2 * (sp - 1)) << "K/V blocks: 4 layers, forward and backward";
      EXPECT_EQ(v.send_bytes.at(3), 4 * 2 * (sp - 1) * block * 4);
      EXPECT_EQ(v.sends.at(4), 4 * sp) << "dK/dV sums";
      EXPECT_EQ(v.send_bytes.at(4), 4 * sp * block * 4);  // fp32
    }
  }
}

// Colossal-AI's ring self-attention (arXiv 2105.13120; RingQK and RingAV of
// colossalai/legacy/nn/layer/parallel_sequence/_operation.py): per layer and micro-batch on each
// rank, forward sp-1 key blocks (tag 5) and sp-1 value blocks (tag 6) of b*(s/sp)*h elements,
// backward the same again, and two all-reduces over the sp group of b*s*h elements (dV, dK of the
// whole sequence). tiny-gpt fp32: block 2*(32/sp)*64*4 bytes, all-reduce 2*32*64*4 = 16384 bytes.
TEST(SequenceParallel, RingSelfAttentionTrafficIsTheClosedForm) {
  for (int sp : {2, 4}) {
    const Schedule s(tiny({"cluster.gpus=" + std::to_string(sp), "strategy.sp=" + std::to_string(sp),
                           "strategy.sp_mode=ring"}));
    const int64_t block = 2 * (32 / sp) * 64 * 4;
    for (int rank = 0; rank < sp; ++rank) {
      std::map<std::pair<int, int>, int64_t> sends, bytes;  // (tag, peer offset) -> count, bytes
      int64_t all_reduces = 0, all_reduce_bytes = 0;
      for (const Task& t : s.program(rank).tasks) {
        if (const auto* m = std::get_if<SendRecv>(&t.op); m && m->is_send && m->microbatch == 1) {
          const int offset = (m->peer - rank + sp) % sp;
          ++sends[{m->tag, offset}];
          bytes[{m->tag, offset}] += m->bytes;
        }
        if (const auto* c = std::get_if<Collective>(&t.op);
            c && c->microbatch == 1 && s.group(c->group).kind == GroupKind::kSp) {
          EXPECT_EQ(c->op, CollectiveOp::kAllReduce);
          EXPECT_EQ(c->phase, Phase::kBackward);
          ++all_reduces;
          all_reduce_bytes += c->bytes;
        }
      }
      for (int tag : {5, 6}) {
        EXPECT_EQ(sends.size(), 2u) << "only key and value blocks, only to the next rank";
        EXPECT_EQ((sends[{tag, 1}]), 4 * 2 * (sp - 1)) << "tag " << tag << ": 4 layers, forward and backward";
        EXPECT_EQ((bytes[{tag, 1}]), 4 * 2 * (sp - 1) * block);
      }
      EXPECT_EQ(all_reduces, 4 * 2);
      EXPECT_EQ(all_reduce_bytes, 4 * 2 * 16384);
    }
  }
}

// Every activation a rank keeps or makes is per token of its share of the sequence but the 4-byte
// loss scalar, so the activation peak falls as 1/sp: peak(sp 4) = (peak(sp 2) - 4) / 2 + 4.
TEST(SequenceParallel, ActivationPeakFallsAsOneOverSp) {
  auto peak = [](const char* mode, int sp) {
    const Schedule s(tiny({"cluster.gpus=" + std::to_string(sp), "strategy.sp=" + std::to_string(sp),
                           std::string("strategy.sp_mode=") + mode}));
    int64_t p = 0;
    walk_memory(s.program(0), [&](const Task&, const MemoryBreakdown& m, int64_t) {
      p = std::max(p, m[BufferRole::kActivation]);
    });
    return p;
  };
  for (const char* mode : {"ulysses", "ring_attention", "ring"}) {
    const int64_t two = peak(mode, 2), four = peak(mode, 4);
    EXPECT_GT(two, 4 * 64 * 1024) << mode;
    EXPECT_EQ(four, (two - 4) / 2 + 4) << mode;
  }
}

TEST(SequenceParallel, GradientsAreReducedOverDataAndSequenceRanks) {
  const Schedule s(tiny({"cluster.gpus=4", "strategy.sp=2", "strategy.sp_mode=ring_attention"}));
  const Program p = s.program(3);
  int reductions = 0;
  for (const Task& t : p.tasks)
    if (const auto* c = std::get_if<Collective>(&t.op); c && t.stream == Stream::kGradComm) {
      const ProcessGroup& g = s.group(c->group);
      EXPECT_EQ(g.kind, GroupKind::kDp);
      EXPECT_EQ(g.ranks, (std::vector<int>{0, 1, 2, 3}));  // (dp, sp) order: rank = dp*2 + sp
      ++reductions;
    }
  EXPECT_GT(reductions, 0);
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

// `tandem plan`'s sp/layer column (shared/plan_summary.h: sp_bytes_per_layer_mb), tiny-gpt in
// fp32, per layer and micro-batch on every rank, by hand (Collective::bytes: the buffer, as the
// plan's other columns count collectives):
//  - Ulysses sp 2: the all-to-alls of 4 b(s/P)h elements forward and 4 backward: 8 * 2*16*64 * 4.
//  - ring attention sp P: block b(s/P) 2h: P-1 forward, P-1 backward, P dK/dV sums (fp32 = dtype):
//    (3P - 2) * 2*(32/P)*128 * 4 bytes: sp 2 -> 4 * 16384, sp 4 -> 10 * 8192.
//  - Megatron-SP tp 2 (the tensor group): forward the all-gathers before QKV and fc1 and the
//    reduce-scatters after o and fc2; backward the all-gathers of dy before the two row-parallel
//    backwards, of x again for the two column-parallel weight gradients, and the reduce-scatters
//    of their dx: 10 of b*s*h = 2*32*64 elements * 4 bytes.
TEST(SequenceParallel, PlanSpColumnIsTheClosedFormPerLayerAndMicroBatch) {
  auto column = [](std::vector<std::string> sets) {
    const PlanSummary sum = summarize(Schedule(tiny(sets)));
    std::vector<double> v;
    for (const RankPlan& r : sum.ranks) {
      EXPECT_EQ(r.layers, 4);
      v.push_back(r.sp_bytes_per_layer_mb);
    }
    return v;
  };
  for (double b : column({"cluster.gpus=2", "strategy.sp=2", "strategy.sp_mode=ulysses"}))
    EXPECT_EQ(b, 8.0 * 2 * 16 * 64 * 4);
  for (double b : column({"cluster.gpus=2", "strategy.sp=2", "strategy.sp_mode=ring_attention"}))
    EXPECT_EQ(b, 4.0 * 16384);
  for (double b : column({"cluster.gpus=4", "strategy.sp=4", "strategy.sp_mode=ring_attention"}))
    EXPECT_EQ(b, 10.0 * 8192);
  for (double b : column({"cluster.gpus=2", "strategy.tp=2", "strategy.sp_mode=megatron"}))
    EXPECT_EQ(b, 10.0 * 2 * 32 * 64 * 4);
  for (double b : column({"cluster.gpus=2", "strategy.tp=2"})) EXPECT_EQ(b, 0.0);  // no sp
  // Ring self-attention sp P: 4(P-1) blocks of b(s/P)h (8192 bytes at sp 2, 4096 at sp 4) and two
  // all-reduces of bsh (16384 bytes each).
  for (double b : column({"cluster.gpus=2", "strategy.sp=2", "strategy.sp_mode=ring"}))
    EXPECT_EQ(b, 4.0 * 8192 + 2 * 16384);
  for (double b : column({"cluster.gpus=4", "strategy.sp=4", "strategy.sp_mode=ring"}))
    EXPECT_EQ(b, 12.0 * 4096 + 2 * 16384);
  // The pipeline's messages are not sequence traffic: ring attention sp 2 with pp 2 keeps the
  // per-layer figure (each stage runs 2 of the 4 layers).
  const PlanSummary pp = summarize(Schedule(tiny({"cluster.gpus=4", "strategy.sp=2", "strategy.pp=2",
                                                  "strategy.sp_mode=ring_attention"})));
  for (const RankPlan& r : pp.ranks) {
    EXPECT_EQ(r.layers, 2);
    EXPECT_EQ(r.sp_bytes_per_layer_mb, 4.0 * 16384);
    EXPECT_GT(r.p2p_bytes, r.sp_bytes);
  }
}

}  // namespace
}  // namespace tandem
