// software.tp_comm_overlap in the simulator: a tp 8 Megatron-SP layer stack on one DGX H100 node,
// with GPU-sized shapes on the tiny GPT's small layer count so that it replays in well under 2 s.
//
// Without the overlap, each layer's forward waits on the compute stream for two all-gathers
// (before qkv and fc1) and two reduce-scatters (after o and fc2) on kComm, and its backward for
// the row-parallel dgrads' two all-gathers: nothing else runs on the compute stream meanwhile, so
// all of that is exposed. With the overlap those six become ring exchanges on kTpSend / kTpRecv,
// one block of n_local = seq / 8 = 512 rows per step, while the compute stream multiplies the
// block it already holds. Sizes (hidden 8192, bf16): a block is 512 * 8192 * 2 B = 8 MiB, about
// 23 us at 450 GB/s * 0.8; the smallest block GEMM, qkv's 512 x 3072 x 8192 (3 * 8192 / 8
// columns), is 2 * 512 * 3072 * 8192 = 25.8 GFLOP, about 26 us even at the 989 TFLOP/s peak.
// Each transfer but the first can therefore hide under a GEMM, and the exposed communication of
// the slowest rank must shrink.
#include <gtest/gtest.h>

#include <sstream>
#include <string>
#include <vector>

#include "sim/sim_report.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

Schedule h100_tp8(bool overlap) {
  std::vector<std::string> sets = {
      "cluster.preset=dgx-h100", "cluster.gpus=8",         "strategy.tp=8",          "strategy.sp_mode=megatron",
      "strategy.dtype=bf16",     "strategy.flash_attention=true",
      "model.layers=2",          "model.hidden=8192",      "model.heads=64",         "model.seq_len=4096",
      "strategy.micro_batch=1",  "strategy.global_batch=2"};
  if (overlap) sets.push_back("software.tp_comm_overlap=true");
  return Schedule(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
}

TEST(TpCommOverlapSim, HidesTensorParallelCommunication) {
  const Schedule plain = h100_tp8(false), overlapped = h100_tp8(true);
  ASSERT_EQ(plain.world_size(), 8);
  ASSERT_EQ(plain.scenario().strategy.micro_batches(), 2);
  ASSERT_TRUE(overlapped.scenario().software.tp_comm_overlap);
  SimResult a, b;
  ASSERT_NO_THROW(a = simulate(plain, {}));
  ASSERT_NO_THROW(b = simulate(overlapped, {}));
  for (const SimResult* r : {&a, &b}) {
    EXPECT_FALSE(r->oom);
    EXPECT_GT(r->iteration_time_s, 0);
    EXPECT_GT(r->collectives, 0u);
  }
  const Breakdown pa = breakdown_of(a, a.slowest_rank), pb = breakdown_of(b, b.slowest_rank);
  EXPECT_GT(pa.exposed_comm_s, 0);
  EXPECT_LT(pb.exposed_comm_s, pa.exposed_comm_s)
      << "exposed communication with the overlap " << pb.exposed_comm_s << " s, without " << pa.exposed_comm_s << " s";
  // The same holds on every rank (the tensor ranks run the same program up to their peers).
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r)
    EXPECT_LT(b.ranks[r].exposed_comm_s, a.ranks[r].exposed_comm_s) << "rank " << r;
  // And what `tandem sim --json` prints says so: its breakdown's exposed_comm_s (the slowest
  // rank's, %.9g) is smaller with the overlap.
  auto json_exposed = [](const Schedule& sched, const SimResult& r) {
    std::ostringstream json;
    write_json(json, sched, r);
    const std::string s = json.str(), key = "\"exposed_comm_s\": ";
    const size_t at = s.find(key, s.find("\"breakdown\""));
    EXPECT_NE(at, std::string::npos) << s;
    return at == std::string::npos ? -1.0 : std::stod(s.substr(at + key.size()));
  };
  const double ja = json_exposed(plain, a), jb = json_exposed(overlapped, b);
  EXPECT_NEAR(ja, pa.exposed_comm_s, 1e-8 * pa.exposed_comm_s);
  EXPECT_NEAR(jb, pb.exposed_comm_s, 1e-8 * pb.exposed_comm_s);
  EXPECT_LT(jb, ja);
}

}  // namespace
}  // namespace tandem::sim::testing
