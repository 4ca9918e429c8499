// Heterogeneous memory in the simulator (docs/offload.md): the claim that dynamic
// placement fits where no offload does not and is faster than a static placement at the same
// memory limit (the Colossal-AI seed: Gemini faster than a static policy), on the tiny GPT with the
// HBM a test names (the default, for the switch test below: 0.004 GiB = 4 294 967 bytes).
#include <gtest/gtest.h>

#include <variant>

#include "shared/memory_timeline.h"
#include "shared/param_layout.h"
#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::sim {
namespace {

Schedule tiny(std::vector<std::string> sets, const char* hbm_gib = "0.004") {
  sets.push_back(std::string("cluster.hbm_gib=") + hbm_gib);
  sets.push_back("strategy.chunk_min_m=0");
  sets.push_back("strategy.chunk_search_range_m=0");
  return Schedule(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
}

int64_t copied_bytes(const Program& p, CopyDirection d) {
  int64_t n = 0;
  for (const Task& t : p.tasks)
    if (const Copy* c = std::get_if<Copy>(&t.op); c != nullptr && c->direction == d) n += c->bytes;
  return n;
}

// Where the physics says dynamic placement wins. Two conditions, both derived here:
// (1) The limit forces the static policy to put every chunk on the host. Then both policies step
//     every chunk's Adam on the host (auto always does: Gemini's default gpu_margin_mem_ratio 0),
//     so what remains between them is their copies. At a limit where params keeps some chunks on
//     the device (OPT-13B at 80 GB, docs/offload.md), it steps those on the GPU and auto cannot win
//     (auto's host Adam of every chunk is what it loses there, not traffic).
// (2) The copies, not the compute, set the iteration: params' uploads alone take longer than twice
//     the whole iteration without offload, so they cannot hide under the compute. That is the
//     regime of a model larger than the GPU on its real link: the 43-layer GPT on one A100
//     (docs/offload.md, "largest GPT") moves 1.1 TB per iteration at 27.8 GB/s, about 40 s, against
//     about 20 s of compute. The tiny GPT reaches it on a 0.5 GB/s link.
// Under these, per iteration with M micro-batches and P the bytes of every chunk's parameter shard
// (1 rank: a shard is the chunk; fp32, so a gradient shard is P too): params uploads each chunk
// before each forward and each backward of each micro-batch, >= 2 M P up, and P down (each
// gradient once, for the host Adam); auto, evicting nothing, sends each chunk's gradient down
// after every micro-batch (M P down) and brings the accumulated one back from the second on plus
// the updated parameters once ((M - 1) P + P = M P up). On a full-duplex link each direction is
// its own limit, so auto's busier direction carries at most half of params', and the link-bound
// iteration is shorter.
TEST(OffloadSim, AutoFitsWhereNoneDoesNotAndBeatsParamsWhereTheLimitAndTheLinkBind) {
  const char* kLimit = "0.0032";  // GiB, 3 435 973 bytes: under no offload's peak, over auto's / 0.9
  const int64_t hbm = int64_t(0.0032 * 1073741824.0);
  const std::vector<std::string> link = {"cluster.pcie_bandwidth_gbps=0.5"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), link.begin(), link.end());
    return a;
  };
  const Schedule none = tiny(with({}), kLimit);
  ASSERT_GT(memory_profile(none, 0).peak_device_bytes, hbm);
  EXPECT_TRUE(simulate(none).oom);
  // (1) Every fraction below 1 runs out of memory at this limit: params needs every chunk on the host.
  for (const char* f : {"0.25", "0.5", "0.75", "0.9"}) {
    const Schedule part = tiny(with({"strategy.offload=params", std::string("strategy.offload_fraction=") + f}), kLimit);
    const ParamLayout lay = make_param_layout(part.scenario(), 0, 0);
    int on_host = 0;
    for (const GradBucket& b : lay.buckets) on_host += b.on_host ? 1 : 0;
    if (on_host < int(lay.buckets.size())) {
      EXPECT_GT(memory_profile(part, 0).peak_device_bytes, hbm) << "offload_fraction " << f;
    }
  }
  const Schedule stat = tiny(with({"strategy.offload=params", "strategy.offload_fraction=1"}), kLimit);
  const Schedule autop = tiny(with({"strategy.offload=auto"}), kLimit);
  ASSERT_LE(memory_profile(stat, 0).peak_device_bytes, hbm);
  ASSERT_LE(memory_profile(autop, 0).peak_device_bytes, int64_t(0.9 * double(hbm)));
  const SimResult rs = simulate(stat), ra = simulate(autop);
  ASSERT_FALSE(rs.oom);
  ASSERT_FALSE(ra.oom);
  // The traffic derived above, P from params' one gradient shard down per chunk.
  const int64_t m = stat.scenario().strategy.global_batch / stat.scenario().strategy.micro_batch;
  ASSERT_EQ(m, 4);
  const int64_t p = copied_bytes(stat.program(0), CopyDirection::kD2H);
  EXPECT_GE(copied_bytes(stat.program(0), CopyDirection::kH2D), 2 * m * p);
  EXPECT_EQ(copied_bytes(autop.program(0), CopyDirection::kD2H), m * p);
  EXPECT_EQ(copied_bytes(autop.program(0), CopyDirection::kH2D), m * p);
  // (2) params' uploads alone, at the link's full 0.5 GB/s (the platform derates it: slower still),
  // exceed twice the iteration without offload, and bound params' iteration from below.
  const SimResult free_run = simulate(tiny(with({}), "80"));
  ASSERT_FALSE(free_run.oom);
  const double up_s = double(copied_bytes(stat.program(0), CopyDirection::kH2D)) / 0.5e9;
  EXPECT_GT(up_s, 2 * free_run.iteration_time_s);
  EXPECT_GE(rs.iteration_time_s, up_s);
  // Auto is faster at the same limit.
  EXPECT_LT(ra.iteration_time_s, rs.iteration_time_s);
}

TEST(OffloadSim, RanksOnOnePcieSwitchSlowEachOtherDown) {
  // ZeRO-3 over GPUs 0 and 1, every chunk on the host: both ranks copy the same chunks at the same
  // moments. On the DGX A100 preset they share a PCIe switch uplink (docs/offload.md), so the
  // iteration is longer than with a link of their own each (gpus_per_pcie_switch 0); the programs
  // are the same.
  const std::vector<std::string> base = {"cluster.gpus=2", "strategy.dp=2", "strategy.zero_stage=3",
                                         "strategy.offload=params", "strategy.offload_fraction=1"};
  std::vector<std::string> own = base;
  own.push_back("cluster.gpus_per_pcie_switch=0");
  const Schedule shared_switch = tiny(base), own_links = tiny(own);
  ASSERT_EQ(shared_switch.scenario().cluster.gpus_per_pcie_switch, 2);
  const SimResult a = simulate(shared_switch), b = simulate(own_links);
  ASSERT_FALSE(a.oom);
  ASSERT_FALSE(b.oom);
  for (CopyDirection d : {CopyDirection::kH2D, CopyDirection::kD2H})
    EXPECT_EQ(copied_bytes(shared_switch.program(0), d), copied_bytes(own_links.program(0), d));
  EXPECT_GT(a.iteration_time_s, b.iteration_time_s);
}

// strategy.gpu_margin_mem_ratio (docs/offload.md): the chunks the margin holds step Adam on the
// GPU. The tiny GPT at 80 GiB (6 chunks of 49 408 fp32 elements) with the node's host memory at
// 0.1 GB/s, so that the host Adam is slow: its bytes are 32 an element in fp32 (gradient 4, master,
// m, v read and written 24, parameter 4: sim/host_adam_cost.h), 6 x 49 408 x 32 = 9 486 336 bytes,
// at most 0.1 GB/s on the one rank of the node: at least 94.9 ms, after the backward (every Adam
// waits for the gradient norm). Ratio 0: every chunk steps there, so the iteration takes at least
// that. Ratio 1: the margin (80 GiB less a few MiB) / 4 holds all 6 chunks' fp32 shards
// (tests/shared/offload_margin_test.cc), nothing steps on the host and nothing crosses PCIe: the
// iteration is the device's work alone, under that bound (the whole tiny step at the A100's own
// figures takes about 4 ms: AutoFits... above).
TEST(OffloadSim, MarginChunksStepAdamOnTheDevice) {
  const std::vector<std::string> sets = {"strategy.offload=auto", "cluster.host_memory_bandwidth_gbps=0.1"};
  const double host_adam_s = 6.0 * 49408 * 32 / 0.1e9;
  const Schedule r0 = tiny(sets, "80");
  std::vector<std::string> all = sets;
  all.push_back("strategy.gpu_margin_mem_ratio=1");
  const Schedule r1 = tiny(all, "80");
  EXPECT_EQ(copied_bytes(r1.program(0), CopyDirection::kH2D) + copied_bytes(r1.program(0), CopyDirection::kD2H), 0);
  const SimResult s0 = simulate(r0), s1 = simulate(r1);
  ASSERT_FALSE(s0.oom);
  ASSERT_FALSE(s1.oom);
  EXPECT_GE(s0.iteration_time_s, host_adam_s);
  EXPECT_LT(s1.iteration_time_s, host_adam_s);
}

}  // namespace
}  // namespace tandem::sim
