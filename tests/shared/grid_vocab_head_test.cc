// The vocabulary-parallel head and loss of 2D, 2.5D and 3D tensor parallelism (shared/tp2d.h:
// GridEndOps::vocab_parallel; Colossal-AI's VocabParallelClassifier2D / 3D with
// VocabParallelCrossEntropy2D / 2p5D / 3D). What each rank stores (the logits block) and moves
// (the head's collectives), derived by hand for the tiny GPT with a 2304-token vocabulary
// (above Colossal-AI's vocab_parallel_limit of 2048, so the vocabulary-parallel head is chosen).
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "grid_test_util.h"
#include "shared/schedule.h"
#include "shared/schedule_validator.h"

namespace tandem {
namespace {

using testing::with;

const std::vector<std::string> kVocab = {"model.vocab=2304"};
const std::vector<std::string> k2d = {"cluster.gpus=4", "strategy.tp=4", "strategy.tp_mode=2d"};
const std::vector<std::string> k2p5d = {"cluster.gpus=8", "strategy.tp=8", "strategy.tp_mode=2.5d",
                                        "strategy.tp_depth=2", "strategy.micro_batch=4"};
const std::vector<std::string> k3d = {"cluster.gpus=8", "strategy.tp=8", "strategy.tp_mode=3d",
                                      "strategy.micro_batch=4"};

// Bytes of the buffer named `name` (micro-batch 0's, e.g. "m0.logits") in rank's program.
int64_t buffer_bytes(const Schedule& s, int rank, const std::string& name) {
  for (const Buffer& b : s.program(rank).buffers)
    if (b.name == name) return b.bytes;
  return -1;
}

// Bytes of micro-batch 0's collectives outside the layers (layer -1: embedding, final norm, head
// and loss) that `rank` takes part in, by phase and collective.
std::map<std::pair<Phase, CollectiveOp>, int64_t> ends_traffic(const Schedule& s, int rank) {
  std::map<std::pair<Phase, CollectiveOp>, int64_t> bytes;
  for (const Task& t : s.program(rank).tasks)
    if (const auto* c = std::get_if<Collective>(&t.op))
      if (c->layer == -1 && c->microbatch == 0) bytes[{c->phase, c->op}] += c->bytes;
  return bytes;
}

TEST(GridVocabHead, EveryRankStoresItsLogitsBlock) {
  // The logits of micro-batch 0, fp32, tiny GPT (s 32) with vocab V = 2304:
  //   1D tp 1, b 2:           b s V          = 2*32*2304        = 147456 elements (589824 bytes)
  //   2D q 2, b 2:            b/q s V/q      = 1*32*1152        =  36864 (147456 bytes): 1D / q^2
  //   2.5D d 2 q 2, b 4:      b/(dq) s V/q   = 1*32*1152        =  36864 (147456 bytes)
  //   3D q 2, b 4:            b/q^2 s V/q    = 1*32*1152        =  36864 (147456 bytes): b s V / q^3
  // where the gathered head kept b/q s V (2D) or b/q^2 s V (3D): V per token rather than V/q.
  EXPECT_EQ(buffer_bytes(Schedule(testing::tiny(kVocab)), 0, "m0.logits"), 589824);
  for (const auto& sets : {k2d, k2p5d, k3d}) {
    const Schedule s(testing::tiny(with(sets, kVocab)));
    for (int r = 0; r < s.world_size(); ++r) EXPECT_EQ(buffer_bytes(s, r, "m0.logits"), 147456) << sets[2] << r;
  }
  // At Colossal-AI's limit (vocab 2048, not above it) the head is the gathered one: the row
  // holds whole logits, b/q s V = 1*32*2048 floats.
  const Schedule at_limit(testing::tiny(with(k2d, {"model.vocab=2048"})));
  EXPECT_EQ(buffer_bytes(at_limit, 0, "m0.logits"), 32 * 2048 * 4);
}

TEST(GridVocabHead, SchedulesAreValid) {
  for (const auto& sets : {k2d, k2p5d, k3d, with(k2d, {"cluster.gpus=8", "strategy.pp=2"}),
                           with(k3d, {"cluster.gpus=16", "strategy.zero_stage=1"}),
                           with(k3d, {"cluster.gpus=16", "strategy.pp=2"}),
                           with(k2p5d, {"cluster.gpus=16", "strategy.pp=2"}),
                           with(k2p5d, {"cluster.gpus=16", "strategy.zero_stage=1"}),
                           with(k3d, {"model.tied_embeddings=false"}),
                           with(k2d, {"strategy.recompute=full"}), with(k2d, {"model.tied_embeddings=false"})}) {
    const Schedule s(testing::tiny(with(sets, kVocab)));
    std::string all;
    for (const std::string& p : validate_schedule(s)) all += p + "\n";
    EXPECT_EQ(all, "") << sets[2];
  }
}

TEST(GridVocabHead, A2dHeadMovesTheSummaClassifierClosedForm) {
  // VocabParallelClassifier2D (Matmul_ABT_2D forward, Matmul_AB_2D + Matmul_ATB_2D backward) on a
  // q x q grid with the table T [V, h] in blocks [V/q, h/q] and yf [b s, h] in blocks
  // [b s / q, h/q]; per rank and micro-batch, in elements:
  //   forward   q broadcasts of a T block (V h / q^2 each)            -> V h / q
  //             q reduces of partial logits (b s / q * V / q each)     -> b s V / q
  //   backward  dyf: q broadcasts of a dlogits block and q of a T block -> b s V / q + V h / q
  //             dT:  q broadcasts of a dlogits block                  -> b s V / q
  //                  q reduces of a partial dT block                   -> V h / q
  // Tiny GPT, b 2, s 32, h 64, V 2304, q 2, fp32: V h / q = 73728 elements = 294912 bytes, and
  // b s V / q = 73728 elements = 294912 bytes.
  //   forward broadcasts 294912, reduces 294912; backward broadcasts 3 * 294912 = 884736,
  //   reduces 294912.
  // All-reduces (fp32): forward the final norm's 2 of b s / q rows (256 bytes), the loss's three
  // (max, sum of exponentials, target logit) of b s / q rows on the row group (384 bytes), the
  // micro-batch's loss on the column group (4 bytes): 644; backward the norm's one of 2 b s / q
  // floats: 256. The table is gathered neither for the head nor, since session 9, for the
  // embedding (VocabParallelEmbedding2D): the embedding's only collectives are the reduce-scatter
  // of its partial embeddings [b s, h/q] = 2*32*32 floats = 8192 bytes forward (over the column
  // group) and the all-gather of dx, 8192 bytes, backward (the gathered embedding moved the
  // [V, h/q] table, 294912 bytes, each way instead).
  const Schedule s(testing::tiny(with(k2d, kVocab)));
  for (int rank = 0; rank < 4; ++rank) {
    auto t = ends_traffic(s, rank);
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kBroadcast}]), 294912) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kReduce}]), 294912) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kBroadcast}]), 884736) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kReduce}]), 294912) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kAllReduce}]), 644) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kAllReduce}]), 256) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kAllGather}]), 0) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kReduceScatter}]), 8192) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kAllGather}]), 8192) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kReduceScatter}]), 0) << rank;
  }
}

TEST(GridVocabHead, A3dHeadMovesTheClassifier3dClosedForm) {
  // _VocabParallelClassifier3D on a q x q x q cube, the table's rows cut q^2 ways ([V/q^2, h/q]
  // per rank), yf [b s / q^2, h/q]: per rank and micro-batch, in elements (an all-gather counted
  // by its output, a reduce-scatter by its input, as the IR counts them):
  //   forward   all-gather yf over the input group: b s h / q^2; the table over the weight group:
  //             V h / q^2; reduce-scatter the logits over the output group: b s V / q^2
  //   backward  all-gather dlogits: b s V / q^2; the table again: V h / q^2; yf again:
  //             b s h / q^2; reduce-scatter dyf: b s h / q^2 and dT: V h / q^2
  //             (tandem gathers the table and yf again rather than keep them: shared/tp3d.h).
  // Tiny GPT, b 4, s 32, h 64, V 2304, q 2, fp32: b s h / q^2 = 2048 elements (8192 bytes),
  // V h / q^2 = 36864 (147456 bytes), b s V / q^2 = 73728 (294912 bytes).
  // The embedding (VocabParallelEmbedding3D) adds: forward the table gathered over B into its
  // vocabulary part [V/q, h/q] (36864 elements, 147456 bytes) and the partial embeddings of the
  // q batch blocks b*q.. [q * b/q^2 s, h/q] = 2*32*32 = 2048 elements (8192 bytes)
  // reduce-scattered over A; backward dx all-gathered over A (8192 bytes) and the part's gradient
  // reduce-scattered over B (147456 bytes). (The gathered embedding moved 36864 + 73728 elements
  // = 442368 bytes each way: the whole [V, h/q] over B then A.)
  //   forward all-gather 8192 + 147456 + 147456 = 303104; reduce-scatter 294912 + 8192 = 303104;
  //   backward all-gather 294912 + 147456 + 8192 + 8192 = 458752; reduce-scatter
  //   8192 + 147456 + 147456 = 303104.
  // All-reduces (fp32): forward the final norm's 2 of b s / q^2 rows (256 bytes), the loss's three
  // over A (384 bytes), the loss over C and B (8 bytes): 648; backward the norm's 256.
  const Schedule s(testing::tiny(with(k3d, kVocab)));
  for (int rank = 0; rank < 8; ++rank) {
    auto t = ends_traffic(s, rank);
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kAllGather}]), 303104) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kReduceScatter}]), 303104) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kAllGather}]), 458752) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kReduceScatter}]), 303104) << rank;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kAllReduce}]), 648) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kAllReduce}]), 256) << rank;
  }
}

// The vocabulary-parallel embedding (VocabParallelEmbedding2D / 2p5D / 3D, chosen above 2048
// tokens of vocabulary as the head): what a rank holds for it, by hand, tiny GPT (s 32, h 64),
// V 2304, fp32, micro-batch 0 on rank r.
TEST(GridVocabEmbedding, EveryRankHoldsItsGroupsTokensAndPartialEmbeddings) {
  //   2D q 2, b 2: the column group's q batch blocks = the micro-batch, b s = 64 tokens
  //     (int32: 256 bytes, kept to the backward); partial embeddings [b s, h/q] = 64*32 floats
  //     = 8192 bytes; no table gathered (the rank's [V/q, h/q] block is looked up in place).
  //   2.5D d 2 q 2, b 4: the depth layer's share, b/d s = 64 tokens: 256 and 8192 bytes.
  //   3D q 2, b 4: q batch blocks of b/q^2, b/q s = 64 tokens: 256 and 8192 bytes; plus the
  //     vocabulary part [V/q, h/q] = 1152*32 floats = 147456 bytes gathered over B.
  // The gathered embedding held the batch block's tokens (b s / q = 32 under 2D: 128 bytes) and
  // the [V, h/q] table, 2304*32 floats = 294912 bytes.
  for (const auto& sets : {k2d, k2p5d, k3d}) {
    const Schedule s(testing::tiny(with(sets, kVocab)));
    for (int r = 0; r < s.world_size(); ++r) {
      EXPECT_EQ(buffer_bytes(s, r, "m0.tokens"), 256) << sets[2] << r;
      EXPECT_EQ(buffer_bytes(s, r, "m0.x_embed_partial"), 8192) << sets[2] << r;
      // The rank's embedding [n, h/q]: n = b/q s (2D), b/(d q) s (2.5D), b/q^2 s (3D) = 32 tokens.
      EXPECT_EQ(buffer_bytes(s, r, "m0.x_embed"), 32 * 32 * 4) << sets[2] << r;
      EXPECT_EQ(buffer_bytes(s, r, "m0.table_block"), -1) << sets[2] << r;
      EXPECT_EQ(buffer_bytes(s, r, "m0.table_part"), sets == k3d ? 147456 : -1) << sets[2] << r;
    }
  }
  // At the limit (V 2048) the embedding gathers the table: [V, h/q] = 2048*32 floats, and looks
  // up its own batch block's 32 tokens.
  const Schedule at_limit(testing::tiny(with(k2d, {"model.vocab=2048"})));
  EXPECT_EQ(buffer_bytes(at_limit, 0, "m0.tokens"), 128);
  EXPECT_EQ(buffer_bytes(at_limit, 0, "m0.table_block"), 2048 * 32 * 4);
  EXPECT_EQ(buffer_bytes(at_limit, 0, "m0.x_embed_partial"), -1);
}

// Under 2D the rank's table gradient comes from its own lookup of its vocabulary rows: the
// embedding moves no table block, only activations. With PP 2 the first stage holds the
// embedding alone outside the layers, so its micro-batch 0 collectives at layer -1 are the
// embedding's: the reduce-scatter forward and the all-gather backward of b s h / q = 2*32*32
// floats = 8192 bytes, and nothing else (the tied table's gradient all-reduce with the last stage
// belongs to no micro-batch).
TEST(GridVocabEmbedding, A2dEmbeddingMovesOnlyItsActivations) {
  const Schedule s(testing::tiny(with(k2d, {"cluster.gpus=8", "strategy.pp=2", "model.vocab=2304"})));
  for (int rank = 0; rank < 4; ++rank) {  // the first stage's grid
    auto t = ends_traffic(s, rank);
    int64_t all = 0;
    for (const auto& [k, v] : t) all += v;
    EXPECT_EQ((t[{Phase::kForward, CollectiveOp::kReduceScatter}]), 8192) << rank;
    EXPECT_EQ((t[{Phase::kBackward, CollectiveOp::kAllGather}]), 8192) << rank;
    EXPECT_EQ(all, 2 * 8192) << rank;
  }
}

}  // namespace
}  // namespace tandem
