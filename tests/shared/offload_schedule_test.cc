// Parameter offload (strategy.offload params, docs/offload.md) on the tiny GPT: the chunks, the
// moves as Copy tasks, the memory, and the rules, against figures worked out by hand.
//
// tiny-gpt (scenarios/tiny-gpt.textproto): hidden 64, ffn 256, vocabulary 256, 4 layers, tied
// embeddings, fp32. Units in execution order: embedding 256*64 = 16 384 elements; each layer
// 4*64 (two layer norms) + 4*64*64 (q, k, v, o) + 2*64*256 (fc1, fc2) = 49 408; the head's final
// norm 128 (it shares the embedding's table). With chunk_min_m = 0 and chunk_search_range_m = 0 the
// search tries only its start, the largest unit rounded up to the interval (hidden 64): 49 408
// (= 772 * 64). Next-fit: [embedding] (33 024 left, a layer does not fit), [L0] .. [L3], [head]:
// 6 chunks of 49 408 fp32 elements = 197 632 bytes, padding 33 024 + 49 280 = 82 304 elements.
// offload_fraction 0.5: target half of 6 * 197 632; chunks 0, 1, 2 go to the host (sent 0, 1 and 2
// chunks before each, all under 3) -> the embedding, L0 and L1.
#include <gtest/gtest.h>

#include <tuple>
#include <variant>

#include "shared/chunk_layout.h"
#include "shared/error.h"
#include "shared/memory_timeline.h"
#include "shared/param_layout.h"
#include "shared/plan_summary.h"
#include "shared/step_generator.h"
#include "tests/shared/schedule_test_util.h"

namespace tandem {
namespace {

using testing::tiny;

const std::vector<std::string> kHalf = {"strategy.offload=params", "strategy.offload_fraction=0.5",
                                        "strategy.chunk_min_m=0", "strategy.chunk_search_range_m=0"};
constexpr int64_t kChunkBytes = 49408 * 4;

std::vector<std::string> with(std::vector<std::string> a, const std::vector<std::string>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

TEST(OffloadParams, ChunksOfTheTinyGpt) {
  const Scenario sc = tiny(kHalf);
  const ParamLayout lay = make_param_layout(sc, 0, 0);
  EXPECT_EQ(lay.chunk_elements, 49408);
  EXPECT_EQ(lay.chunk_wasted_elements, 82304);
  ASSERT_EQ(lay.buckets.size(), 6u);
  // Buckets in backward order: bucket 5 is the first chunk (the embedding).
  const std::vector<bool> host = {false, false, false, true, true, true};
  for (size_t k = 0; k < 6; ++k) {
    EXPECT_EQ(lay.buckets[k].elements, 49408) << k;
    EXPECT_EQ(lay.buckets[k].on_host, host[k]) << k;
  }
  EXPECT_EQ(lay.buckets[5].units, std::vector<int>{0});
  EXPECT_EQ(lay.buckets[0].units, std::vector<int>{5});
}

TEST(OffloadParams, MovesAreCopiesOnThePcieStreams) {
  const Schedule s(tiny(kHalf));
  const Program p = s.program(0);
  int64_t h2d = 0, d2h = 0;
  for (const Task& t : p.tasks)
    if (const Copy* c = std::get_if<Copy>(&t.op)) {
      EXPECT_EQ(c->bytes, kChunkBytes);
      if (c->direction == CopyDirection::kH2D) {
        h2d += c->bytes;
        EXPECT_EQ(t.stream, Stream::kH2D);
      } else {
        d2h += c->bytes;
        EXPECT_EQ(t.stream, Stream::kD2H);
      }
    }
  // 4 micro-batches: each forward gathers the 3 host chunks, plus the embedding chunk again for
  // the head (tied table); each backward the 3 again -> 4 * (4 + 3) = 28 chunks up. Down: the 3
  // host chunks' gradients once, for the host Adam.
  EXPECT_EQ(h2d, 28 * kChunkBytes);
  EXPECT_EQ(d2h, 3 * kChunkBytes);
}

TEST(OffloadParams, HostHoldsTheChunksAndTheirAdamState) {
  const Schedule s(tiny(kHalf));
  const MemoryProfile m = memory_profile(s, 0);
  // Host: 3 chunks of parameters (fp32: they are their own master) + Adam m and v for each, and at
  // the peak two chunks' gradients: the one the host Adam steps and the next, which comes down
  // one bucket ahead (shared/grad_sync.cc emit_optimizer).
  EXPECT_EQ(m.peak_host_bytes, (3 + 3 + 3 + 2) * kChunkBytes);
  // Device, at the peak: Adam m and v of the 3 device chunks (fp32: no separate master); every
  // chunk's gradient (they stay on the device in this increment); the 3 device chunks' parameters
  // and the host chunks gathered then (one, or two while the next is prefetched).
  EXPECT_EQ(m.at_peak[BufferRole::kOptimizer], 6 * kChunkBytes);
  EXPECT_EQ(m.at_peak[BufferRole::kGrad], 6 * kChunkBytes);
  EXPECT_GE(m.at_peak[BufferRole::kParam], 4 * kChunkBytes);
  EXPECT_LE(m.at_peak[BufferRole::kParam], 5 * kChunkBytes);
}

TEST(OffloadParams, HostMemoryIsChecked) {
  // A node of 2 GPUs needs 2 * 11 half chunks = 2 173 952 bytes; 0.003 GiB is 3 221 225 bytes.
  const Scenario sc = tiny(with(kHalf, {"cluster.gpus=2", "strategy.zero_stage=3", "cluster.host_memory_gib=0.003"}));
  const Schedule s(sc);
  const PlanSummary sum = summarize(s);
  // ZeRO-3 over 2: each rank holds half of every host chunk: 11 half chunks (as above).
  EXPECT_EQ(sum.peak_host_bytes, 11 * kChunkBytes / 2);
  EXPECT_EQ(sum.host_bytes_per_node, 11 * kChunkBytes);
  EXPECT_NO_THROW(check_host_memory(sc, sum));
  const Scenario small = tiny(with(kHalf, {"cluster.gpus=2", "strategy.zero_stage=3", "cluster.host_memory_gib=0.001"}));
  try {
    check_host_memory(small, summarize(Schedule(small)));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    EXPECT_NE(std::string(e.what()).find("2173952 bytes"), std::string::npos) << e.what();
  }
}

std::vector<std::string> kChunks(const char* mode) {
  std::vector<std::string> v = {mode, "strategy.chunk_min_m=0", "strategy.chunk_search_range_m=0"};
  if (std::string(mode) == "strategy.offload=params") v.push_back("strategy.offload_fraction=0.5");
  return v;
}

void expect_bad_input(const std::vector<std::string>& sets, const std::string& words) {
  try {
    tiny(sets);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(OffloadParams, Rules) {
  expect_bad_input({"strategy.offload=params"}, "strategy.offload_fraction");
  expect_bad_input({"strategy.offload_fraction=0.5"}, "offload params only");
  expect_bad_input({"strategy.offload=params", "strategy.offload_fraction=1.5"}, "[0, 1]");
  expect_bad_input(with(kHalf, {"cluster.gpus=2"}), "zero_stage=3");
  // Gemini has no pipeline axis (GeminiPlugin's mesh, gemini_plugin.py:42/:551 at 4f9953be):
  // both chunk policies are refused with pp > 1, naming the fields and the source.
  for (const char* mode : {"strategy.offload=params", "strategy.offload=auto"})
    for (const char* words : {"strategy.offload", "strategy.pp", "gemini_plugin.py:42", "set strategy.pp=1"})
      expect_bad_input(with(kChunks(mode), {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.pp=2"}), words);
  expect_bad_input({"strategy.chunk_min_m=-1"}, "strategy.chunk_min_m");
}

}  // namespace
}  // namespace tandem

namespace tandem {
namespace {

const std::vector<std::string> kAuto = {"strategy.offload=auto", "strategy.chunk_min_m=0",
                                        "strategy.chunk_search_range_m=0"};

int64_t copies(const Program& p) {
  int64_t n = 0;
  for (const Task& t : p.tasks) n += std::holds_alternative<Copy>(t.op);
  return n;
}

struct Moved {
  int64_t h2d = 0, d2h = 0;
};
Moved moved(const Program& p) {
  Moved m;
  for (const Task& t : p.tasks)
    if (const Copy* c = std::get_if<Copy>(&t.op)) (c->direction == CopyDirection::kH2D ? m.h2d : m.d2h) += c->bytes;
  return m;
}

// Whether bucket k's parameters live on the host: its host parameter buffer (one rank) or its
// ZeRO-3 shard placed on the host.
bool params_on_host(const Program& p, int k) {
  const std::string prefix = "B" + std::to_string(k) + ".";
  for (const Buffer& b : p.buffers)
    if ((b.name == prefix + "host_params" || b.name == prefix + "param_shard") && b.placement == Placement::kHost)
      return true;
  return false;
}

// Gemini's auto policy puts every chunk's optimizer states on the host (placement_policy.py:224-234,
// gemini_ddp.py:865-874 at 4f9953be335e) and sends every reduced gradient chunk there after each
// backward (gemini_ddp.py:429-431), bringing the accumulated shard back up to add the next
// micro-batch's (chunk/manager.py:282-312). With 80 GiB nothing is evicted. One rank, 6 whole
// chunks of kChunkBytes (fp32), 4 micro-batches: down, each chunk's gradient every micro-batch
// (4 x 6 = 24 chunks); up, the accumulated gradient for micro-batches 2-4 (3 x 6 = 18) and each
// chunk's parameters once after the host Adam (6): 24 chunks.
TEST(OffloadAuto, EveryChunksOptimizerStateAndGradientGoToTheHost) {
  const Schedule s(testing::tiny(kAuto));
  const Program p = s.program(0);
  EXPECT_EQ(copies(p), 48);
  EXPECT_EQ(moved(p).h2d, 24 * kChunkBytes);
  EXPECT_EQ(moved(p).d2h, 24 * kChunkBytes);
  for (int k = 0; k < 6; ++k) EXPECT_FALSE(params_on_host(p, k)) << k;
  const MemoryProfile m = memory_profile(s, 0);
  // Device at the peak: the 6 chunks' parameters, no optimizer state, and the gradients only of
  // chunks in their backward: at least one, at most three (a layer's chunk, the embedding chunk
  // whose table the tied head wrote, and an accumulation buffer).
  EXPECT_EQ(m.at_peak[BufferRole::kOptimizer], 0);
  EXPECT_EQ(m.at_peak[BufferRole::kParam], 6 * kChunkBytes);
  EXPECT_GE(m.at_peak[BufferRole::kGrad], 1 * kChunkBytes);
  EXPECT_LE(m.at_peak[BufferRole::kGrad], 3 * kChunkBytes);
  // Host: fp32 master, Adam m and v and the accumulated gradient of the 6 chunks (24 chunks), and
  // while one chunk steps its updated parameters before the copy up (1 more, chunk by chunk).
  EXPECT_EQ(m.peak_host_bytes, 25 * kChunkBytes);
}

TEST(OffloadAuto, EvictsParameterChunksUntilThePeakIsUnderTheCap) {
  // 0.003 GiB: the cap is 0.9 * 3 221 225 = 2 899 102 bytes; every parameter chunk on the device
  // (the warm-up) peaks above it, so some parameter chunks go to the host and the peak ends under it.
  for (const int gpus : {1, 2}) {
    const std::vector<std::string> sets =
        with(kAuto, {"cluster.gpus=" + std::to_string(gpus), "strategy.zero_stage=3", "cluster.hbm_gib=0.003"});
    const int64_t cap = int64_t(0.9 * double(int64_t(0.003 * 1073741824.0)));
    const Schedule s(testing::tiny(sets));
    const Program p = s.program(0);
    const MemoryProfile m = memory_profile(s, 0);
    EXPECT_LE(m.peak_device_bytes, cap) << gpus;
    EXPECT_EQ(m.at_peak[BufferRole::kOptimizer], 0) << gpus;
    const Schedule warmup(testing::tiny(with(sets, {"cluster.hbm_gib=80"})));
    EXPECT_GT(memory_profile(warmup, 0).peak_device_bytes, cap) << gpus;
    // Bytes per iteration: a rank moves shards of kChunkBytes / gpus, over mb micro-batches (global
    // batch 8 / micro-batch 2 / gpus). Every chunk's gradient shard goes down every micro-batch and
    // comes back up to be added to from the second on; a chunk that starts on the device gets its
    // updated parameters up after the host Adam; the others move as the plan's per-operator moves
    // (one shard each): such a chunk comes up at least once (it is used) and goes down once less
    // when its device copy is there at the step (dropped), else as often; a device chunk never moves.
    const AutoPlacement a = plan_offload_auto(s.scenario(), s.grid());
    int host = 0;
    for (int k = 0; k < 6; ++k) host += params_on_host(p, k);
    EXPECT_GT(host, 0) << gpus;
    EXPECT_LT(host, 6) << gpus;
    const int64_t shard = kChunkBytes / gpus;
    const int mb = 8 / 2 / gpus;
    std::vector<int> ups(6, 0), downs(6, 0);
    for (const AutoMove& v : a.moves) {
      EXPECT_EQ(v.bytes, shard) << gpus;
      (v.up ? ups : downs)[size_t(v.bucket)]++;
    }
    int up = 0, down = 0;
    for (int k = 0; k < 6; ++k) {
      up += ups[size_t(k)], down += downs[size_t(k)];
      if (params_on_host(p, k)) {
        EXPECT_GE(ups[size_t(k)], 1) << gpus << " " << k;
        EXPECT_GE(ups[size_t(k)] - downs[size_t(k)], 0) << gpus << " " << k;
        EXPECT_LE(ups[size_t(k)] - downs[size_t(k)], 1) << gpus << " " << k;
      } else {
        EXPECT_EQ(ups[size_t(k)] + downs[size_t(k)], 0) << gpus << " " << k;
      }
    }
    EXPECT_EQ(moved(p).h2d, ((mb - 1) * 6 + (6 - host) + up) * shard) << gpus;
    EXPECT_EQ(moved(p).d2h, (mb * 6 + down) * shard) << gpus;
  }
}

TEST(OffloadAuto, WarmupLimitsModelDataToAFifthOfHbm) {
  // Gemini's warm-up iteration keeps 80 % of HBM for non-model data (placement_policy.py:136, 181):
  // a 197 632-byte chunk needs at least 197 632 / 0.2 = 988 160 bytes of HBM. 0.0009 GiB =
  // 966 367 bytes is below; 0.001 GiB (1 073 741 bytes) passes this check (and then fails the steady
  // cap: the all-host peak is above 0.9 x 0.001 GiB).
  try {
    Schedule s(testing::tiny(with(kAuto, {"cluster.hbm_gib=0.0009"})));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    const std::string w = e.what();
    EXPECT_NE(w.find("0.2 x HBM (193273 bytes"), std::string::npos) << w;
    EXPECT_NE(w.find("needs 197632 bytes"), std::string::npos) << w;
  }
  try {
    Schedule s(testing::tiny(with(kAuto, {"cluster.hbm_gib=0.001"})));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).find("warm-up"), std::string::npos) << e.what();
  }
}

TEST(OffloadAuto, FailsWithTheTaskAndTheBytesWhenNothingFits) {
  // 0.002 GiB: the cap is 0.9 * 2 147 483 = 1 932 735 bytes (0.2 x HBM = 429 496 holds a chunk, so
  // the warm-up check passes). The head's backward (operator 6: the 6 forward passes before it)
  // needs the head's chunk, the embedding's (the tied table) and L3's (the next, prefetched):
  // with every other chunk evicted, 3 chunks of model data besides the non-model bytes (the
  // head's and the table's gradients and the activations) the message names, over the cap.
  try {
    Schedule s(testing::tiny(with(kAuto, {"cluster.hbm_gib=0.002"})));
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    const std::string w = e.what();
    EXPECT_NE(w.find("1932735 bytes"), std::string::npos) << w;
    const size_t a = w.find("needs "), b = w.find(" of them non-model");
    ASSERT_NE(a, std::string::npos) << w;
    ASSERT_NE(b, std::string::npos) << w;
    const int64_t needs = std::stoll(w.substr(a + 6));
    const int64_t non_model = std::stoll(w.substr(w.rfind('(', b) + 1));
    EXPECT_EQ(needs - non_model, 3 * kChunkBytes) << w;
    EXPECT_NE(w.find("operator 6 (the backward of parameter unit 5)"), std::string::npos) << w;
    EXPECT_GT(needs, 1932735) << w;
  }
}

// Per-operator eviction (Gemini's pre_op / adjust_layout / evict_tensors: shared/auto_placement.h)
// worked by hand. The tiny GPT widened to hidden 256 (ffn 1024), one rank, one micro-batch of one
// 8-token sequence, full recompute, so that the chunks dwarf the activations. Units: embedding
// 256 x 256 = 65 536 elements; a layer 4 x 256 + 4 x 256^2 + 2 x 256 x 1024 = 787 456; the head's
// final norm 512. Chunk size: the largest unit, already a multiple of the interval 256 (3076 x
// 256); next-fit gives 6 chunks, [embedding] [L0] .. [L3] [head], of C = 787 456 x 4 = 3 149 824
// bytes. Buckets in backward order: B0 head, B1 L3, B2 L2, B3 L1, B4 L0, B5 embedding.
// Operators (a unit's pass, then the optimizer), with the buckets each needs: its own, the tied
// table for the head, and the next bucket, prefetched (ensure_params, shared/grad_sync.cc):
// 0 emb fwd {B5, B4}, 1 L0 {B4, B3}, 2 L1 {B3, B2}, 3 L2 {B2, B1}, 4 L3 {B1, B0}, 5 head fwd {B0, B5},
// 6 head bwd {B0, B5, B1}, 7 L3 bwd {B1, B2}, 8 L2 {B2, B3}, 9 L1 {B3, B4}, 10 L0 {B4, B5},
// 11 emb bwd {B5}, 12 step {}.
// Non-model bytes per operator: the gradients (whole chunks, auto without data parallelism) plus
// activations a (a few 8 x 256 and 8 x 1024 fp32 tensors and the 8 x 256 logits under full
// recompute: a few hundred KB, well under C / 2). Forward: a. Op 6: B0's and B5's gradients, 2C + a.
// Ops 7-10: the layer's gradient, B5's (written since the head's backward) and the previous
// chunk's, still in flight to the host (two chunks in flight: free_grads_in_flight): 3C + a.
// Op 11: B5's and the last two layers' in flight: 3C + a. Op 12: a.
// Cap: 0.9 x HBM (0.0245 GiB) = 7.52 C. A check at an operator: chunks resident + those it
// brings + its non-model bytes <= cap; the victims are furthest next use first, counted around
// the iteration (13 operators).
// The warm-up (all 6 resident) peaks at 6C + 3C + a > cap: plan. Round 1, all start on the device:
// op 6 needs 6C + 2C + a: evict one of B2 (next use op 7: 1 on), B3 (2), B4 (3): B4, which starts on
// the device, so it starts on the host next round. Round 2: B4 comes up at op 0 and is evicted at
// op 6 (7C + a fits); op 7 (5C + 3C + a) needs one more: B0 (next use op 4 of the next iteration:
// 10 on), B3 (1), B5 (3): B0, on the device: next round. Round 3: B4 up at 0, B0 up at 4; op 6
// evicts B4, op 7 evicts B0 (7C + a); op 9 brings B4 (4C held + C + 3C + a): B1 (next use op 3 of
// the next iteration: 7 on), B2 (6), B5 (1): B1, on the device: next round. Round 4 (B0, B1, B4 on
// the host): up B4 at op 0, B1 at op 3, B0 at op 4 (6C + a); op 6 evicts B4 (furthest of B2, B3,
// B4), op 7 evicts B0 (furthest of B0, B3, B5); op 9 evicts B1 (7 on, before B2 6, B5 1) and brings
// B4 (3C + C + 3C + a); ops 10-11 hold 4C + 3C + a; the step drops B4's device copy (the host Adam
// writes the host shard). No chunk that starts on the device was picked: done.
TEST(OffloadAuto, EvictsPerOperatorFurthestNextUseFirst) {
  const Scenario sc = tiny(with(kAuto, {"model.hidden=256", "model.seq_len=8", "strategy.micro_batch=1",
                                        "strategy.global_batch=1", "strategy.recompute=full",
                                        "cluster.hbm_gib=0.0245"}));
  constexpr int64_t C = 787456 * 4;
  const int64_t cap = int64_t(0.9 * double(sc.cluster.hbm_bytes()));
  const Schedule s(sc);
  const AutoPlacement a = plan_offload_auto(sc, s.grid());
  EXPECT_EQ(a.cap_bytes, cap);
  // Chunks in execution order: embedding, L0, L1, L2, L3, head; B4 = L0, B1 = L3, B0 = head.
  EXPECT_EQ(a.chunks.host, std::vector<bool>({false, true, false, false, true, true}));
  const std::vector<std::tuple<int, int, bool>> want = {{0, 4, true},  {3, 1, true},  {4, 0, true}, {6, 4, false},
                                                        {7, 0, false}, {9, 1, false}, {9, 4, true}};
  ASSERT_EQ(a.moves.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_EQ(a.moves[i].op, std::get<0>(want[i])) << i;
    EXPECT_EQ(a.moves[i].bucket, std::get<1>(want[i])) << i;
    EXPECT_EQ(a.moves[i].up, std::get<2>(want[i])) << i;
    EXPECT_EQ(a.moves[i].bytes, C) << i;
  }
  // The program makes those moves as copies, in that order, between each chunk's host shard and
  // its device copy; then the host Adam of each chunk, whose updated parameters go up only for
  // the chunks that start on the device (B2, B3, B5: the others' Adam writes the host shard).
  const Program p = s.program(0);
  std::vector<std::string> params;
  for (const Task& t : p.tasks)
    if (const Copy* c = std::get_if<Copy>(&t.op)) {
      const std::string src = p.buffers[c->src].name, dst = p.buffers[c->dst].name;
      if (src.find("param") != std::string::npos || dst.find("param") != std::string::npos) params.push_back(src + ">" + dst);
    }
  EXPECT_EQ(params, std::vector<std::string>({"B4.host_params>B4.params", "B1.host_params>B1.params",
                                              "B0.host_params>B0.params", "B4.params>B4.host_params",
                                              "B0.params>B0.host_params", "B1.params>B1.host_params",
                                              "B4.host_params>B4.params", "B2.host_param>B2.params",
                                              "B3.host_param>B3.params", "B5.host_param>B5.params"}));
  // Per iteration: up, 4 chunk moves and 3 updated chunks; down, 3 evictions and the 6 gradients.
  EXPECT_EQ(moved(p).h2d, 7 * C);
  EXPECT_EQ(moved(p).d2h, 9 * C);
  // The peak: 7 chunks (4 resident + 3 gradients, ops 7-11) and activations under C / 2; under the cap.
  const MemoryProfile m = memory_profile(s, 0);
  EXPECT_GE(m.peak_device_bytes, 7 * C);
  EXPECT_LT(m.peak_device_bytes, 7 * C + C / 2);
  EXPECT_LE(m.peak_device_bytes, cap);
  EXPECT_EQ(a.warmup_peak_bytes >= 9 * C, true);
}

}  // namespace
}  // namespace tandem

