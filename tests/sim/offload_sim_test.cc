// Heterogeneous memory in the simulator (docs/offload.md): the claim that dynamic
// placement fits where no offload does not and moves less than a static policy at the same memory
// limit (the Colossal-AI seed: Gemini faster than a static placement), on the tiny GPT with an HBM
// of 0.004 GiB = 4 294 967 bytes.
#include <gtest/gtest.h>

#include <variant>

#include "shared/memory_timeline.h"
#include "shared/schedule.h"
#include "sim/simulation.h"

namespace tandem::sim {
namespace {

Schedule tiny(std::vector<std::string> sets) {
  sets.push_back("cluster.hbm_gib=0.004");
  sets.push_back("strategy.chunk_min_m=0");
  sets.push_back("strategy.chunk_search_range_m=0");
  return Schedule(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
}

int64_t copied_bytes(const Program& p) {
  int64_t n = 0;
  for (const Task& t : p.tasks)
    if (const Copy* c = std::get_if<Copy>(&t.op)) n += c->bytes;
  return n;
}

TEST(OffloadSim, AutoFitsWhereNoneDoesNotAndMovesLessThanStaticOffload) {
  const int64_t hbm = int64_t(0.004 * 1073741824.0);
  // No offload: the planned peak is over the HBM, and the replay runs out of memory.
  const Schedule none = tiny({});
  ASSERT_GT(memory_profile(none, 0).peak_device_bytes, hbm);
  EXPECT_TRUE(simulate(none).oom);
  // Static placement of every chunk (the fraction at which params fits this HBM: at 0.5 the three
  // device chunks' state leaves too little, tests/shared/offload_schedule_test.cc) against auto,
  // which moves only the chunks it must to stay under 0.9 x HBM.
  const Schedule all = tiny({"strategy.offload=params", "strategy.offload_fraction=1"});
  const Schedule half = tiny({"strategy.offload=params", "strategy.offload_fraction=0.5"});
  const Schedule autop = tiny({"strategy.offload=auto"});
  EXPECT_TRUE(simulate(half).oom);
  const SimResult rs = simulate(all), ra = simulate(autop);
  ASSERT_FALSE(rs.oom);
  ASSERT_FALSE(ra.oom);
  EXPECT_LT(copied_bytes(autop.program(0)), copied_bytes(all.program(0)));
  // At one micro-batch per iteration auto moves fewer bytes (with the tiny GPT's 4 it does not:
  // Gemini sends every chunk's gradient to the host after each micro-batch and brings it back to
  // add the next, docs/offload.md, a round trip per chunk and micro-batch that params, whose
  // gradients stay on the device, does not make). Where the host link bounds the step (0.5 GB/s:
  // the copies take several times the 1 ms of compute) fewer bytes is a shorter iteration. At the
  // A100's own link it is not (docs/offload.md, session 9): auto's parameters go back up after the
  // host Adam, which waits for every gradient (the norm), at the end of the step, where params'
  // uploads hide under the next forward.
  const std::vector<std::string> copy_bound = {"strategy.global_batch=2", "cluster.pcie_bandwidth_gbps=0.5"};
  auto with = [&](std::vector<std::string> a) {
    a.insert(a.end(), copy_bound.begin(), copy_bound.end());
    return a;
  };
  const Schedule all1 = tiny(with({"strategy.offload=params", "strategy.offload_fraction=1"}));
  const Schedule auto1 = tiny(with({"strategy.offload=auto"}));
  const SimResult rs1 = simulate(all1), ra1 = simulate(auto1);
  ASSERT_FALSE(rs1.oom);
  ASSERT_FALSE(ra1.oom);
  EXPECT_LT(copied_bytes(auto1.program(0)), copied_bytes(all1.program(0)));
  EXPECT_LT(ra1.iteration_time_s, rs1.iteration_time_s);
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
  EXPECT_EQ(copied_bytes(shared_switch.program(0)), copied_bytes(own_links.program(0)));
  EXPECT_GT(a.iteration_time_s, b.iteration_time_s);
}

}  // namespace
}  // namespace tandem::sim
