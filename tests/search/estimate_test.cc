// The estimate's closed forms (search/estimate.h) on hand-made layer costs: the tiny GPT (4 layers,
// hidden 64, seq 32, fp32, tied embeddings, global batch 8) on 2 GPUs as dp 1 x pp 2 with
// micro_batch 1, so m = 8 micro-batches and 2 layers per stage; no data parallelism, so no
// gradient traffic. The only figure not written here is the p2p time, which comes from the
// simulator's own closed form (CommCost::p2p_s) for one activation of 1 x 32 x 64 x 4 bytes.
#include <gtest/gtest.h>

#include "search/estimate.h"
#include "shared/scenario.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

LayerCosts hand_costs() {
  LayerCosts c;
  c.forward_s = 1e-3;
  c.backward_s = 2e-3;
  c.first_s = 0.5e-3;
  c.last_s = 0.25e-3;
  c.optimizer_s_per_element = 1e-9;
  c.layer_params = 1000;
  c.embedding_params = 500;
  c.other_params = 100;
  return c;
}

TEST(Estimate, OneFOneBPipeline) {
  const Scenario sc = load_scenario(kTiny, {"cluster.gpus=2", "strategy.pp=2", "strategy.micro_batch=1"});
  CommCost comm(sc.cluster);
  const Estimate e = estimate(sc, hand_costs(), comm);
  // Layer 3 ms; stages 2 x 3 = 6 ms, + 0.5 ms (first) and + 0.25 ms (last): 6.5 and 6.25 ms.
  // Pipeline: 8 x 6.5 + (12.75 - 6.5) = 58.25 ms; p2p: 2 x (2 - 1) activations.
  const double p2p = 2.0 * comm.p2p_s(0, 1, 1.0 * 32 * 64 * 4);
  // Optimizer: the larger stage holds 2 layers (2000) + max(embedding 500, head 100 + the tied
  // embedding's copy 500) = 2600 elements, at 1 ns each.
  EXPECT_NEAR(e.optimizer_s, 2600e-9, 1e-15);
  EXPECT_NEAR(e.iteration_s, 58.25e-3 + p2p + 2600e-9, 1e-12);
  EXPECT_NEAR(e.bubble_s, 6.25e-3 + p2p, 1e-12);
  EXPECT_NEAR(e.compute_s, 8 * 6.5e-3, 1e-12);
  EXPECT_EQ(e.comm_s, 0.0);
  EXPECT_STREQ(e.limit(), "bubble");
}

TEST(Estimate, InterleavingDividesTheBubble) {
  const Scenario sc = load_scenario(kTiny, {"cluster.gpus=2", "strategy.pp=2", "strategy.micro_batch=1",
                                            "strategy.pp_schedule=interleaved", "strategy.virtual_stages=2"});
  CommCost comm(sc.cluster);
  const Estimate e = estimate(sc, hand_costs(), comm);
  const double p2p = 2.0 * comm.p2p_s(0, 1, 1.0 * 32 * 64 * 4);
  // 8 x 6.5 + 6.25 / 2 ms.
  EXPECT_NEAR(e.iteration_s, 52e-3 + 3.125e-3 + p2p + 2600e-9, 1e-12);
}

TEST(Estimate, RecomputeIsCountedAndNamed) {
  const Scenario sc = load_scenario(kTiny, {"cluster.gpus=1", "strategy.micro_batch=1"});
  CommCost comm(sc.cluster);
  LayerCosts c = hand_costs();
  c.recompute_s = 1e-3;
  const Estimate e = estimate(sc, c, comm);
  // One stage of 4 layers of 4 ms, + 0.75 ms of ends: 16.75 ms per micro-batch, 8 of them; no
  // bubble. Recompute: 8 x 4 x 1 ms. Optimizer: 4000 + 500 + 100 elements.
  EXPECT_NEAR(e.iteration_s, 8 * 16.75e-3 + 4600e-9, 1e-12);
  EXPECT_NEAR(e.recompute_s, 32e-3, 1e-12);
  EXPECT_EQ(e.bubble_s, 0.0);
  EXPECT_STREQ(e.limit(), "recompute");
}

TEST(Estimate, ZeroTwoReduceScattersEveryMicroBatchExposed) {
  // dp 2 on 2 GPUs, micro_batch 1: m = 8 / 2 = 4 micro-batches, one stage of 4 layers. The
  // stage's gradients: 4 x 1000 + 500 + 100 = 4600 fp32 elements = 18,400 bytes, one bucket (the
  // default bucket_mb is far larger). ZeRO 2 reduce-scatters them after every micro-batch, and
  // the shard's accumulate on the compute stream waits for it (shared/grad_sync.cc), so each is
  // exposed: 4 x rs. ZeRO 1 (grad_reduce_overlap on, one bucket) exposes max(rs, rs - backward)
  // = rs once.
  const std::vector<std::string> base = {"cluster.gpus=2", "strategy.dp=2", "strategy.micro_batch=1",
                                         "software.grad_reduce_overlap=true", "software.overlap_param_gather=true"};
  std::vector<std::string> z1 = base, z2 = base;
  z1.push_back("strategy.zero_stage=1");
  z2.push_back("strategy.zero_stage=2");
  const Scenario s1 = load_scenario(kTiny, z1), s2 = load_scenario(kTiny, z2);
  CommCost comm(s1.cluster);
  const double rs = comm.collective_s(CollectiveOp::kReduceScatter, {0, 1}, 4600.0 * 4);
  const double ag = comm.collective_s(CollectiveOp::kAllGather, {0, 1}, 4600.0 * 4);
  ASSERT_GT(rs, 0);
  // Layer 3 ms, ends 0.75 ms: 4 x 12.75 ms; the gather (overlap_param_gather) hides under the
  // 4 x 1 ms forward but for one bucket: max(ag, ag - 4 ms) = ag. Optimizer: 4600 / 2 elements.
  const double compute = 4 * 12.75e-3, optimizer = 2300e-9;
  EXPECT_NEAR(estimate(s1, hand_costs(), comm).iteration_s, compute + rs + ag + optimizer, 1e-12);
  EXPECT_NEAR(estimate(s2, hand_costs(), comm).iteration_s, compute + 4 * rs + ag + optimizer, 1e-12);
}

TEST(Estimate, GatherAfterTheStepHidesUnderTheOtherBucketsAdam) {
  // ZeRO 1 without overlap_param_gather: each bucket's all-gather follows its Adam, so all but
  // the last hide under the later buckets' Adam. bucket_mb = 0.004 MiB = 4194 bytes of fp32: a
  // bucket closes at 1048 elements, whole units taken in backward order (the generator's layout,
  // shared/param_layout.cc, search/grad_buckets.h): the head's 100 (it shares the embedding) and
  // layer 3's 1000 = 1100; layers 2 and 1: 2000; layer 0 and the embedding's 500: 1500 (all even:
  // no padding for dp 2). Adam: 2300 elements at 10 us each = 23 ms, of which 2/3 (15.3 ms) run
  // after the first bucket's: the gathers (microseconds) hide but the last bucket's: ag(1500 x 4).
  // Without grad_reduce_overlap the training loop issues the reduce-scatters after the whole
  // backward (shared/grad_sync.cc sync_bucket: each waits for the compute stream's last task), so
  // the three run one after the other past its end: rs(1100 x 4) + rs(2000 x 4) + rs(1500 x 4).
  // (Until session 15 the generator let them start as their buckets were written, and only the
  // last, rs(1500 x 4), was exposed.)
  const Scenario sc =
      load_scenario(kTiny, {"cluster.gpus=2", "strategy.dp=2", "strategy.micro_batch=1", "strategy.zero_stage=1",
                            "strategy.bucket_mb=0.004", "software.grad_reduce_overlap=false",
                            "software.overlap_param_gather=false"});
  CommCost comm(sc.cluster);
  LayerCosts c = hand_costs();
  c.optimizer_s_per_element = 1e-5;
  const double rs = comm.collective_s(CollectiveOp::kReduceScatter, {0, 1}, 6000);
  const double ag = comm.collective_s(CollectiveOp::kAllGather, {0, 1}, 6000);
  const double gathers = ag + comm.collective_s(CollectiveOp::kAllGather, {0, 1}, 4400) +
                         comm.collective_s(CollectiveOp::kAllGather, {0, 1}, 8000);
  const double reduces = rs + comm.collective_s(CollectiveOp::kReduceScatter, {0, 1}, 4400) +
                         comm.collective_s(CollectiveOp::kReduceScatter, {0, 1}, 8000);
  ASSERT_LT(gathers, 15.3e-3);
  ASSERT_LT(reduces, 2e-3);
  EXPECT_NEAR(estimate(sc, c, comm).iteration_s, 4 * 12.75e-3 + reduces + ag + 23e-3, 1e-9);
}

TEST(Estimate, OffloadCopiesAtThePcieLink) {
  // dgx-a100-80g: PCIe 32 GB/s derated by the simulator's 0.87 (sim::SimOptions), 5 us latency.
  const Scenario sc = load_scenario(kTiny, {"cluster.gpus=1"});
  CommCost comm(sc.cluster);
  EXPECT_NEAR(comm.copy_s(1e6), 1e6 / (32e9 * 0.87) + 5e-6, 1e-15);
  EXPECT_EQ(comm.copy_s(0), 0.0);
  // Per optimizer element, the copies add to the kernels: 4600 elements x (1 + 2) ns.
  LayerCosts c = hand_costs();
  c.optimizer_copy_s_per_element = 2e-9;
  const Scenario one = load_scenario(kTiny, {"cluster.gpus=1", "strategy.micro_batch=1"});
  EXPECT_NEAR(estimate(one, c, comm).optimizer_s, 4600 * 3e-9, 1e-15);
}

TEST(Estimate, AutoOffloadRoundTripsEveryLaterMicroBatch) {
  // offload auto on one GPU, micro_batch 1: m = 8 micro-batches, one stage of 4 layers, 4600
  // elements updated. From the second micro-batch on each chunk's accumulated gradient comes up and
  // the sum goes down, t_down = 4600 x 4 us = 18.4 ms a micro-batch on each copy stream, under the
  // stage's backward of 4 x 2 ms = 8 ms: exposed 7 x (18.4 - 8) ms = 72.8 ms.
  const Scenario sc = load_scenario(kTiny, {"cluster.gpus=1", "strategy.micro_batch=1", "strategy.offload=auto"});
  CommCost comm(sc.cluster);
  LayerCosts c = hand_costs();
  const Estimate without = estimate(sc, c, comm);
  c.auto_grad_down_s_per_element = 4e-6;
  const Estimate with = estimate(sc, c, comm);
  EXPECT_EQ(without.offload_s, 0.0);
  EXPECT_NEAR(with.offload_s, 72.8e-3, 1e-12);
  EXPECT_NEAR(with.iteration_s - without.iteration_s, 72.8e-3, 1e-12);
  EXPECT_STREQ(with.limit(), "offload");
  // Hidden under the backward when the downloads take less than it: 4600 x 1 us = 4.6 ms < 8 ms.
  c.auto_grad_down_s_per_element = 1e-6;
  EXPECT_EQ(estimate(sc, c, comm).offload_s, 0.0);
  // One micro-batch: nothing to accumulate.
  const Scenario one = load_scenario(kTiny, {"cluster.gpus=1", "strategy.micro_batch=8", "strategy.offload=auto"});
  c.auto_grad_down_s_per_element = 4e-6;
  EXPECT_EQ(estimate(one, c, comm).offload_s, 0.0);
}

}  // namespace
}  // namespace tandem::search
