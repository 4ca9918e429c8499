// software.tp_comm_overlap (shared/tp_overlap.cc): Megatron-SP's all-gathers and reduce-scatters
// as ring exchanges on kTpSend / kTpRecv. The number of exchanges per layer and micro-batch, their
// size, and their peers (the next and previous tensor rank, wrapping around the ring), both in the
// programs each rank generates and through Schedule::peer_for from the class representative's.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "schedule_test_util.h"
#include "shared/schedule.h"

namespace tandem {
namespace {

// The tiny GPT (4 layers, hidden 64, seq 32, micro-batch 2, 4 micro-batches, fp32) with
// Megatron-SP over tp and the overlap on.
std::vector<std::string> overlap_sets(int gpus, int tp, std::vector<std::string> more = {}) {
  std::vector<std::string> v = {"cluster.gpus=" + std::to_string(gpus), "strategy.tp=" + std::to_string(tp),
                                "strategy.sp_mode=megatron", "software.tp_comm_overlap=true"};
  v.insert(v.end(), more.begin(), more.end());
  return v;
}

// The tensor ring neighbours of `rank`: the ranks after and before it in its tp group's order.
std::pair<int, int> ring_neighbours(const Schedule& s, int rank) {
  const std::vector<int>& ring = s.group(s.group_of(rank, GroupKind::kTp)).ranks;
  const int t = int(ring.size());
  int j = 0;
  while (ring[j] != rank) ++j;
  return {ring[(j + 1) % t], ring[(j + t - 1) % t]};
}

struct Exchange {
  TaskId id;
  SendRecv m;
};

// Every SendRecv on the two tensor-ring streams, each attributed to the (layer, micro-batch,
// phase) of the next Compute task in program order: in tp_overlap.cc every send and receive is
// followed by a block GEMM of its own exchange (a gather step sends/receives and then multiplies
// the block; a reduce-scatter step sends its sum and the next step multiplies the next block).
using Key = std::tuple<int, int, Phase>;
struct Count {
  int sends = 0, recvs = 0;
};
std::map<Key, Count> exchanges_by_layer(const Program& p, std::vector<Exchange>* sends,
                                        std::vector<Exchange>* recvs) {
  std::map<Key, Count> out;
  std::vector<const Task*> pending;
  for (const Task& t : p.tasks) {
    if (const auto* m = std::get_if<SendRecv>(&t.op)) {
      if (t.stream == Stream::kTpSend || t.stream == Stream::kTpRecv) {
        EXPECT_EQ(m->is_send, t.stream == Stream::kTpSend) << "task " << t.id;
        (m->is_send ? sends : recvs)->push_back({t.id, *m});
        pending.push_back(&t);
      }
    } else if (const auto* c = std::get_if<Compute>(&t.op)) {
      for (const Task* x : pending) {
        const auto& m = std::get<SendRecv>(x->op);
        EXPECT_EQ(m.microbatch, c->microbatch) << "task " << x->id;
        Count& n = out[{c->layer, c->microbatch, c->phase}];
        (m.is_send ? n.sends : n.recvs)++;
      }
      pending.clear();
    }
  }
  EXPECT_TRUE(pending.empty());
  return out;
}

TEST(TpCommOverlap, RingExchangesPerLayerAndMicroBatch) {
  // tp t = 4 on 4 GPUs: dp 1, one tensor ring {0, 1, 2, 3}.
  // Per layer and micro-batch (tp_overlap.cc, layer_emitter.cc):
  //  forward: two column-parallel all-gather+GEMMs (qkv, fc1). A gather sends its own shard at
  //    step 0 and forwards the block it received at steps 1..t-2 (not at the last step t-1):
  //    1 + (t-2) = t-1 sends; it receives at steps 1..t-1: t-1 receives.
  //    Two row-parallel GEMM+reduce-scatters (o, fc2): steps 0..t-2 send their running sum (the
  //    last step's sum is this rank's shard): t-1 sends; steps 1..t-1 receive: t-1 receives.
  //    So 4(t-1) = 12 sends and 12 receives.
  //  backward: the row-parallel dgrads of fc2 and o gather the output gradient the same way:
  //    2(t-1) = 6 sends and 6 receives. The column-parallel backward keeps its collectives
  //    (all-gather under dgrad, reduce-scatter under wgrad), so nothing more on the ring streams.
  //  No recompute: no kRecompute exchanges.
  const int t = 4, layers = 4, micro_batches = 4;
  const Schedule s(testing::tiny(overlap_sets(4, t)));
  ASSERT_EQ(s.scenario().strategy.micro_batches(), micro_batches);
  ASSERT_EQ(s.world_size(), t);
  // Each exchanged block is one rank's sequence shard of the activations: n_local x hidden, with
  // n_local = micro_batch * seq / t = 2 * 32 / 4 = 16 rows of 64 fp32: 16 * 64 * 4 = 4096 bytes.
  const int64_t block_bytes = 16 * 64 * 4;
  for (int rank = 0; rank < t; ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const Program p = s.program(rank);
    std::vector<Exchange> sends, recvs;
    const std::map<Key, Count> by = exchanges_by_layer(p, &sends, &recvs);
    ASSERT_EQ(by.size(), size_t(layers * micro_batches * 2));  // forward and backward keys
    for (int l = 0; l < layers; ++l)
      for (int mb = 0; mb < micro_batches; ++mb) {
        SCOPED_TRACE("layer " + std::to_string(l) + " micro-batch " + std::to_string(mb));
        const auto fwd = by.find({l, mb, Phase::kForward}), bwd = by.find({l, mb, Phase::kBackward});
        ASSERT_NE(fwd, by.end());
        ASSERT_NE(bwd, by.end());
        EXPECT_EQ(fwd->second.sends, 4 * (t - 1));
        EXPECT_EQ(fwd->second.recvs, 4 * (t - 1));
        EXPECT_EQ(bwd->second.sends, 2 * (t - 1));
        EXPECT_EQ(bwd->second.recvs, 2 * (t - 1));
      }
    // 6(t-1) = 18 per layer and micro-batch, 4 layers x 4 micro-batches: 288 on each stream.
    EXPECT_EQ(sends.size(), size_t(6 * (t - 1) * layers * micro_batches));
    EXPECT_EQ(recvs.size(), sends.size());
    // The ring: send to the next tensor rank, receive from the previous one, wrapping (rank 3
    // sends to 0, rank 0 receives from 3); one tag for the exchanges, one block each.
    const int next = (rank + 1) % t, prev = (rank + t - 1) % t;
    EXPECT_EQ(ring_neighbours(s, rank), std::make_pair(next, prev));
    for (const Exchange& e : sends) {
      EXPECT_EQ(e.m.peer, next) << "task " << e.id;
      EXPECT_EQ(e.m.tag, 2) << "task " << e.id;
      EXPECT_EQ(e.m.bytes, block_bytes) << "task " << e.id;
    }
    for (const Exchange& e : recvs) {
      EXPECT_EQ(e.m.peer, prev) << "task " << e.id;
      EXPECT_EQ(e.m.tag, 2) << "task " << e.id;
      EXPECT_EQ(e.m.bytes, block_bytes) << "task " << e.id;
    }
  }
}

TEST(TpCommOverlap, FullRecomputeRepeatsTheForwardExchanges) {
  // With full recompute each layer's forward runs again before its backward (Phase::kRecompute):
  // 4(t-1) more sends per layer and micro-batch, t = 2 here: 4 forward, 4 recompute, 2 backward.
  const int t = 2;
  const Schedule s(testing::tiny(overlap_sets(2, t, {"strategy.recompute=full"})));
  std::vector<Exchange> sends, recvs;
  const std::map<Key, Count> by = exchanges_by_layer(s.program(1), &sends, &recvs);
  for (int l = 0; l < 4; ++l)
    for (int mb = 0; mb < 4; ++mb) {
      SCOPED_TRACE("layer " + std::to_string(l) + " micro-batch " + std::to_string(mb));
      EXPECT_EQ(by.at({l, mb, Phase::kForward}).sends, 4 * (t - 1));
      EXPECT_EQ(by.at({l, mb, Phase::kRecompute}).sends, 4 * (t - 1));
      EXPECT_EQ(by.at({l, mb, Phase::kBackward}).sends, 2 * (t - 1));
    }
  EXPECT_EQ(sends.size(), size_t(10 * (t - 1) * 4 * 4));
  for (const Exchange& e : sends) EXPECT_EQ(e.m.peer, 0);  // rank 1's next on the ring {0, 1}
}

// The chunk GEMMs carry the compute streams Transformer Engine spreads them over, min(3, tp), in
// dims[3] (a cost hint for the simulator); every other GEMM carries 0.
TEST(TpCommOverlap, ChunkGemmsCarryTheirComputeStreams) {
  // Per layer and micro-batch: t chunks for each of the forward's qkv, o, fc1 and fc2 GEMMs and
  // the backward's fc2 and o dgrads: 6t, over 4 layers and 4 micro-batches; each chunk has
  // n_local = 2 * 32 / t rows.
  for (const int t : {2, 4}) {
    SCOPED_TRACE("tp " + std::to_string(t));
    const Schedule s(testing::tiny(overlap_sets(t, t)));
    const int64_t streams = std::min(3, t), rows = 2 * 32 / t;
    int chunks = 0;
    for (const Task& task : s.program(t - 1).tasks) {
      const auto* c = std::get_if<Compute>(&task.op);
      if (c == nullptr || c->kernel != Kernel::kGemm) continue;
      if (c->dims[3] == 0) continue;
      EXPECT_EQ(c->dims[3], streams) << "task " << task.id;
      EXPECT_EQ(c->dims[0], rows) << "task " << task.id;
      ++chunks;
    }
    EXPECT_EQ(chunks, 6 * t * 4 * 4);
  }
  const Schedule plain(testing::tiny({"cluster.gpus=4", "strategy.tp=4", "strategy.sp_mode=megatron"}));
  for (const Task& task : plain.program(1).tasks) {
    const auto* c = std::get_if<Compute>(&task.op);
    if (c != nullptr && c->kernel == Kernel::kGemm) {
      EXPECT_EQ(c->dims[3], 0) << "task " << task.id;
    }
  }
}

// The column-parallel backward's reduce-scatter of the input gradient runs under the weight-gradient
// GEMM (Megatron-LM: async _reduce_scatter_base, the wgrad, then handle.wait(); shared/step_state.cc
// cites the lines): no compute-stream task from the reduce-scatter up to that GEMM waits for it, so
// the in-order compute stream is not held. With and without the TP overlap (both run this backward).
TEST(TpCommOverlap, DgradReduceScatterRunsUnderTheWgrad) {
  for (const bool overlap : {false, true}) {
    SCOPED_TRACE(overlap ? "tp_comm_overlap" : "plain megatron sp");
    const Schedule s(testing::tiny({"cluster.gpus=4", "strategy.tp=4", "strategy.sp_mode=megatron",
                                    std::string("software.tp_comm_overlap=") + (overlap ? "true" : "false")}));
    const Program p = s.program(2);
    int checked = 0;
    for (size_t i = 0; i < p.tasks.size(); ++i) {
      const auto* rs = std::get_if<Collective>(&p.tasks[i].op);
      if (rs == nullptr || rs->op != CollectiveOp::kReduceScatter || rs->phase != Phase::kBackward) continue;
      if (rs->layer < 0) continue;
      // The next weight-gradient GEMM (kTransA) of the same layer and micro-batch.
      size_t w = i + 1;
      for (; w < p.tasks.size(); ++w) {
        const auto* c = std::get_if<Compute>(&p.tasks[w].op);
        if (c && c->kernel == Kernel::kGemm && (c->flags & kTransA) && c->layer == rs->layer &&
            c->microbatch == rs->microbatch)
          break;
      }
      ASSERT_LT(w, p.tasks.size()) << "task " << i;
      for (size_t j = i + 1; j <= w; ++j) {
        if (p.tasks[j].stream != Stream::kCompute) continue;
        for (TaskId d : p.tasks[j].deps) EXPECT_NE(d, TaskId(i)) << "compute task " << j << " waits for reduce-scatter " << i;
      }
      ++checked;
    }
    // Two column-parallel backwards (qkv, fc1) per layer and micro-batch: 4 layers x 4 micro-batches.
    EXPECT_EQ(checked, 2 * 4 * 4);
  }
}

TEST(TpCommOverlap, NoRingStreamsWithoutTheOverlap) {
  const Schedule s(testing::tiny({"cluster.gpus=4", "strategy.tp=4", "strategy.sp_mode=megatron"}));
  for (const Task& task : s.program(2).tasks)
    EXPECT_TRUE(task.stream != Stream::kTpSend && task.stream != Stream::kTpRecv) << "task " << task.id;
}

TEST(TpCommOverlap, PeersOfTheRepresentativeTranslateAroundTheRing) {
  // dp 2 x pp 2 x tp 4 on 16 GPUs: the simulator generates one program per stage (its rank at
  // dp = tp = 0) and translates its peers with Schedule::peer_for. The representative sends to tp
  // rank 1 and receives from tp rank 3; for every rank this must become its own ring's next and
  // previous member, the last tensor rank wrapping to the first, never leaving the tp group.
  const Schedule s(testing::tiny(overlap_sets(16, 4, {"strategy.pp=2", "strategy.global_batch=16"})));
  ASSERT_EQ(s.scenario().strategy.dp, 2);
  for (int rank = 0; rank < s.world_size(); ++rank) {
    SCOPED_TRACE("rank " + std::to_string(rank));
    const auto [next, prev] = ring_neighbours(s, rank);
    std::vector<Exchange> rep_sends, rep_recvs, own_sends, own_recvs;
    exchanges_by_layer(s.program(s.representative_of(rank)), &rep_sends, &rep_recvs);
    exchanges_by_layer(s.program(rank), &own_sends, &own_recvs);
    ASSERT_FALSE(rep_sends.empty());
    ASSERT_EQ(rep_sends.size(), own_sends.size());
    ASSERT_EQ(rep_recvs.size(), own_recvs.size());
    for (size_t i = 0; i < rep_sends.size(); ++i) {
      EXPECT_EQ(own_sends[i].m.peer, next);
      EXPECT_EQ(s.peer_for(rank, rep_sends[i].m.peer), next);
    }
    for (size_t i = 0; i < rep_recvs.size(); ++i) {
      EXPECT_EQ(own_recvs[i].m.peer, prev);
      EXPECT_EQ(s.peer_for(rank, rep_recvs[i].m.peer), prev);
    }
    // The pipeline peers translate as before: same dp and tp coordinates, the peer's stage.
    const Program own = s.program(rank), rep = s.program(s.representative_of(rank));
    ASSERT_EQ(own.tasks.size(), rep.tasks.size());
    for (size_t i = 0; i < own.tasks.size(); ++i) {
      const auto* a = std::get_if<SendRecv>(&own.tasks[i].op);
      const auto* b = std::get_if<SendRecv>(&rep.tasks[i].op);
      ASSERT_EQ(a == nullptr, b == nullptr) << "task " << i;
      if (a) {
        EXPECT_EQ(s.peer_for(rank, b->peer), a->peer) << "task " << i;
      }
    }
  }
}

}  // namespace
}  // namespace tandem
