// The layer probe's parameter counts on the tiny GPT (hidden 64, 4 heads, ffn 256, vocab 256,
// layernorm, tied embeddings), derived by hand from the Megatron layout (shared/param_layout.cc):
// a layer holds q, k, v, o (4 h^2, split over tp), fc1 and fc2 (2 x 4 h^2, split over tp) and two
// layernorms (4 h, replicated); the embedding table vocab x h is split over tp by rows; the rest
// is the final layernorm (2 h).
#include <gtest/gtest.h>

#include <algorithm>

#include "search/layer_probe.h"
#include "shared/param_layout.h"
#include "shared/scenario.h"
#include "sim/compute_cost_model.h"

namespace tandem::search {
namespace {

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

TEST(LayerProbe, ParametersPerTensorParallelRank) {
  for (int tp : {1, 2, 4}) {
    const Scenario sc =
        load_scenario(kTiny, {"cluster.gpus=" + std::to_string(tp), "strategy.tp=" + std::to_string(tp)});
    LayerProbes probes(sc.cluster);
    const LayerCosts& c = probes.costs(sc);
    EXPECT_EQ(c.layer_params, 12 * 64 * 64 / tp + 4 * 64) << "tp " << tp;
    EXPECT_EQ(c.embedding_params, 256 * 64 / tp) << "tp " << tp;
    EXPECT_EQ(c.other_params, 2 * 64) << "tp " << tp;
    // Every layer runs kernels forward and backward; tp > 1 adds its collectives.
    EXPECT_GT(c.forward_s, 0);
    EXPECT_GT(c.backward_s, 0);
    EXPECT_EQ(c.recompute_s, 0);
    EXPECT_EQ(c.tp_comm_s > 0, tp > 1) << "tp " << tp;
    EXPECT_GT(c.optimizer_s_per_element, 0);
  }
}

TEST(LayerProbe, OneProbePerLayerSetting) {
  const Scenario a = load_scenario(kTiny, {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=2"});
  const Scenario b = load_scenario(kTiny, {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=4"});
  const Scenario c = load_scenario(kTiny, {"cluster.gpus=8", "strategy.tp=2", "strategy.recompute=full"});
  LayerProbes probes(a.cluster);
  probes.costs(a);
  probes.costs(b);  // the same layer: dp and pp do not change it
  EXPECT_EQ(probes.probes(), 1u);
  const LayerCosts& full = probes.costs(c);
  EXPECT_EQ(probes.probes(), 2u);
  EXPECT_GT(full.recompute_s, 0);
}

TEST(LayerProbe, AutoOffloadGradientDownloadsPerElement) {
  // offload auto on one GPU (GPT 1.3B: the tiny GPT is under Gemini's minimum chunk, one chunk kept
  // on the device, nothing moves): after the probe's one micro-batch every chunk's gradient goes
  // down whole (no data parallelism to shard it; shared/grad_sync.cc grads_to_host) and the host
  // Adam steps every chunk's elements: per element, sum_k copy(g bytes x chunk_k) / sum_k chunk_k
  // (g: the gradients' dtype, fp32 here), over the chunks of the probe's one-layer model whose optimizer is on the
  // host, each copy at the PCIe rate plus its latency.
  const std::string gpt13 = std::string(TANDEM_SOURCE_DIR) + "/scenarios/gpt-1.3b-h200.textproto";
  const std::vector<std::string> sets = {"cluster.gpus=1", "strategy.offload=auto", "strategy.tp=1", "strategy.pp=1",
                                         "strategy.dp=1"};
  const Scenario sc = load_scenario(gpt13, sets);
  std::vector<std::string> one = sets;
  one.push_back("model.layers=1");
  const Scenario one_layer = load_scenario(gpt13, one);
  LayerProbes probes(sc.cluster);
  const LayerCosts& c = probes.costs(sc);
  double seconds = 0, elements = 0;
  int chunks = 0;
  for (const GradBucket& b : make_param_layout(one_layer, 0, 0).buckets) {
    if (!b.host_optimizer) continue;
    seconds += probes.comm().copy_s(double(dtype_bytes(sc.grad_dtype())) * double(b.elements));
    elements += double(b.elements);
    ++chunks;
  }
  EXPECT_GT(chunks, 1);
  EXPECT_GT(c.auto_grad_down_s_per_element, 0);
  EXPECT_NEAR(c.auto_grad_down_s_per_element, seconds / elements, 1e-9 * seconds / elements);
  // The optimizer policy's download is once an iteration, whatever the micro-batches: none here.
  std::vector<std::string> opt = sets;
  opt[1] = "strategy.offload=optimizer";
  EXPECT_EQ(probes.costs(load_scenario(gpt13, opt)).auto_grad_down_s_per_element, 0.0);
}

// The tiny GPT's layer at tp 2 (fp32, micro-batch 2 x 32 tokens: n = 64 rows of hidden 64; one
// tp rank holds q, k, v of 96 columns and fc1's 128): the time its compute stream waits for the
// tensor-parallel collectives, derived from the layer's code (shared/layer_emitter.cc,
// shared/step_state.cc) with the simulator's cost functions.
struct TinyTp2 {
  Scenario sc;
  LayerProbes probes;
  sim::ComputeCostModel compute;
  explicit TinyTp2(std::vector<std::string> sets)
      : sc(load_scenario(kTiny, sets)), probes(sc.cluster), compute(sc.cluster, sim::KernelEfficiency{}, true) {}
  double collective(CollectiveOp op) { return probes.comm().collective_s(op, {0, 1}, 64.0 * 64 * 4); }
  // The backward GEMMs of a column-parallel linear of `out` columns: dgrad {n, hidden, out},
  // wgrad {out, hidden, n} (StepState::linear_dgrad, linear_wgrad).
  double gemm(std::array<int64_t, 6> dims, uint8_t flags) {
    Compute k;
    k.kernel = Kernel::kGemm;
    k.dtype = DType::kFp32;
    k.phase = Phase::kBackward;
    k.layer = 0;
    k.flags = flags;
    k.dims = dims;
    return compute.time_s(k);
  }
  double dgrad(int64_t out) { return gemm({64, 64, out}, 0); }
  double wgrad(int64_t out) { return gemm({out, 64, 64}, kTransA | kAccumulateOut); }
};

TEST(LayerProbe, DgradAllReduceRunsUnderTheWgrad) {
  // No sequence parallelism. Forward: the row-parallel linears (attention output, fc2) all-reduce
  // their output, which the residual add reads next: exposed whole, twice. Backward: the
  // row-parallel linears need no collective; each column-parallel one (fc1, then q/k/v)
  // all-reduces its dgrad's partial on the comm stream while the compute stream runs its wgrad,
  // which does not read it; the norm's backward after the wgrad reads it (Megatron-LM's
  // async all-reduce, megatron/mpu/layers.py at 02bb1f5c): exposed max(0, all-reduce - wgrad).
  TinyTp2 t({"cluster.gpus=2", "strategy.tp=2", "strategy.sp_mode=none", "software.tp_comm_overlap=false"});
  const LayerCosts& c = t.probes.costs(t.sc);
  const double ar = t.collective(CollectiveOp::kAllReduce);
  const double expected = 2 * ar + std::max(0.0, ar - t.wgrad(128)) + std::max(0.0, ar - t.wgrad(96));
  EXPECT_NEAR(c.tp_comm_s, expected, 1e-9 * expected);
  EXPECT_LT(c.tp_comm_s, 4 * ar);  // what summing the collectives gave
}

TEST(LayerProbe, SequenceParallelReduceScatterRunsUnderTheWgrad) {
  // Megatron sequence parallelism. Forward, per block: the norm's output all-gathered before the
  // column-parallel GEMM reads it, the row-parallel output reduce-scattered before the residual
  // add reads it: exposed whole, twice each. Backward, per block: the row-parallel linear
  // all-gathers the incoming gradient that its dgrad reads (exposed whole); the column-parallel one
  // all-gathers its input (for the wgrad) while the dgrad runs, then reduce-scatters the dgrad's
  // partial while the wgrad runs (the comm stream in that order); the norm's backward waits for
  // both: from the dgrad's start, max(dgrad, all-gather) + max(wgrad, reduce-scatter), of which
  // the compute stream works dgrad + wgrad.
  TinyTp2 t({"cluster.gpus=2", "strategy.tp=2", "strategy.sp_mode=megatron", "software.tp_comm_overlap=false"});
  const LayerCosts& c = t.probes.costs(t.sc);
  const double ag = t.collective(CollectiveOp::kAllGather), rs = t.collective(CollectiveOp::kReduceScatter);
  double expected = 2 * (ag + rs) + 2 * ag;
  for (int64_t out : {128, 96})
    expected += std::max(0.0, ag - t.dgrad(out)) + std::max(0.0, rs - t.wgrad(out));
  EXPECT_NEAR(c.tp_comm_s, expected, 1e-9 * expected);
  EXPECT_LT(c.tp_comm_s, 4 * (ag + rs));  // what summing the collectives gave
}

// Under full recompute a layer's forward keeps only its output, the next layer's checkpointed
// input (Megatron's full activation recomputation stores each layer's input, 2sbh bytes in
// 16-bit: Korthikanti et al. 2022, "Reducing Activation Recomputation in Large Transformer
// Models"): seq x micro_batch x hidden elements of 2 bytes (fp16), and with Megatron
// sequence parallelism each tp rank keeps its 1/tp of the sequence. OPT-13B (seq 2048, hidden
// 5120, micro-batch 4, fp16; scenarios/offload/opt-13b-auto.textproto): 2048 x 4 x 5120 x 2 =
// 83,886,080 bytes (80 MiB), under offload auto (the scenario's) and none, and / tp with SP.
// Until Session 13 the probe reported 0 here (the layer's own Allocs before its first kernel were
// counted as already live), so the memory bound and offload auto's eviction term saw no
// activations at all.
TEST(LayerProbe, FullRecomputeStoresTheLayersOutput) {
  const std::string opt13 = std::string(TANDEM_SOURCE_DIR) + "/scenarios/offload/opt-13b-auto.textproto";
  const int64_t seq = 2048, micro_batch = 4, hidden = 5120, fp16 = 2;
  const int64_t checkpoint = seq * micro_batch * hidden * fp16;
  ASSERT_EQ(checkpoint, 80 * 1024 * 1024);
  for (const char* offload : {"auto", "none"}) {
    const Scenario sc = load_scenario(opt13, {"strategy.recompute=full", std::string("strategy.offload=") + offload});
    ASSERT_EQ(sc.model.seq_len, seq);
    ASSERT_EQ(sc.model.hidden, hidden);
    ASSERT_EQ(sc.strategy.micro_batch, micro_batch);
    LayerProbes probes(sc.cluster);
    EXPECT_EQ(probes.costs(sc).layer_stored_bytes, checkpoint) << "offload " << offload;
  }
  for (int tp : {2, 4}) {
    const Scenario sc = load_scenario(opt13, {"strategy.recompute=full", "strategy.tp=" + std::to_string(tp),
                                              "strategy.dp=" + std::to_string(8 / tp), "strategy.sp_mode=megatron"});
    LayerProbes probes(sc.cluster);
    EXPECT_EQ(probes.costs(sc).layer_stored_bytes, checkpoint / tp) << "tp " << tp << " with Megatron-SP";
  }
}

}  // namespace
}  // namespace tandem::search
