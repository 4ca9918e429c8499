// The prediction interval: the combination rule on hand-derived numbers, the residual table's
// checks, the attribution of a rank's busy time to cost components, and the interval in --json.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "shared/error.h"
#include "sim/prediction_interval.h"
#include "sim/sim_report.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

constexpr const char* kHead = "component\tgroup\trows\tq10\tq50\tq90\tsource\n";

// A table in which every component has residuals (1, 1, 1) in its own group but those given.
ResidualTable table(const std::string& lines) {
  std::string text = std::string("# test\n") + kHead + lines;
  for (int c = 0; c < kComponentCount; ++c) {
    const std::string name = component_name(Component(c));
    if (lines.find(name + "\t") == std::string::npos) text += name + "\t" + name + "\t1\t1\t1\t1\tnone\n";
  }
  return ResidualTable::parse(text, "test.tsv");
}

ComponentTimes busy(std::initializer_list<std::pair<Component, double>> v) {
  ComponentTimes b{};
  for (auto [c, s] : v) b[size_t(c)] = s;
  return b;
}

TEST(PredictionInterval, OneComponentGivesItsOwnPercentiles) {
  // Share 1: [q10 t, q90 t] = [0.9 * 10, 1.2 * 10].
  const ResidualTable t = table("gemm\tcompute\t5\t0.9\t1.0\t1.2\tx\n");
  const Interval iv = prediction_interval(10, busy({{Component::kGemm, 2.0}}), t);
  EXPECT_NEAR(iv.low_s, 9.0, 1e-12);
  EXPECT_NEAR(iv.high_s, 12.0, 1e-12);
}

TEST(PredictionInterval, OneGroupAddsDeviationsLinearly) {
  // Shares 0.75 (gemm) and 0.25 (attention), one group: low deviation 0.75 * 0.1 + 0.25 * 0.2 =
  // 0.125, high 0.75 * 0.2 + 0.25 * 0.1 = 0.175; centre 1.
  const ResidualTable t = table("gemm\tcompute\t5\t0.9\t1.0\t1.2\tx\nattention\tcompute\t5\t0.8\t1.0\t1.1\tx\n");
  const Interval iv = prediction_interval(10, busy({{Component::kGemm, 3.0}, {Component::kAttention, 1.0}}), t);
  EXPECT_NEAR(iv.low_s, 8.75, 1e-12);
  EXPECT_NEAR(iv.high_s, 11.75, 1e-12);
}

TEST(PredictionInterval, GroupsAddInQuadrature) {
  // The same in two groups: low sqrt(0.075^2 + 0.05^2) = sqrt(0.008125), high sqrt(0.15^2 +
  // 0.025^2) = sqrt(0.023125).
  const ResidualTable t = table("gemm\ta\t5\t0.9\t1.0\t1.2\tx\nattention\tb\t5\t0.8\t1.0\t1.1\tx\n");
  const Interval iv = prediction_interval(10, busy({{Component::kGemm, 3.0}, {Component::kAttention, 1.0}}), t);
  EXPECT_NEAR(iv.low_s, 10 * (1 - std::sqrt(0.008125)), 1e-12);
  EXPECT_NEAR(iv.high_s, 10 * (1 + std::sqrt(0.023125)), 1e-12);
}

TEST(PredictionInterval, MedianShiftsTheCentreAndThePointStaysInside) {
  // gemm (1.05, 1.10, 1.15) and nic (0.9, 1.0, 1.1) in halves: centre 0.5 * 1.10 + 0.5 * 1.0 =
  // 1.05; low 1.05 - sqrt(0.025^2 + 0.05^2), high 1.05 + sqrt(0.025^2 + 0.05^2).
  const ResidualTable t = table("gemm\tcompute\t5\t1.05\t1.10\t1.15\tx\nnic\tnic\t2\t0.9\t1.0\t1.1\tx\n");
  const double d = std::sqrt(0.025 * 0.025 + 0.05 * 0.05);
  Interval iv = prediction_interval(2, busy({{Component::kGemm, 1.0}, {Component::kNic, 1.0}}), t);
  EXPECT_NEAR(iv.low_s, 2 * (1.05 - d), 1e-12);
  EXPECT_NEAR(iv.high_s, 2 * (1.05 + d), 1e-12);
  // gemm alone: [1.05 t, 1.15 t] would leave t out; the interval reaches down to t.
  iv = prediction_interval(2, busy({{Component::kGemm, 1.0}}), t);
  EXPECT_DOUBLE_EQ(iv.low_s, 2.0);
  EXPECT_NEAR(iv.high_s, 2.3, 1e-12);
}

TEST(PredictionInterval, NoBusyTimeGivesThePoint) {
  const Interval iv = prediction_interval(3, ComponentTimes{}, table(""));
  EXPECT_EQ(iv.low_s, 3);
  EXPECT_EQ(iv.high_s, 3);
}

TEST(PredictionInterval, TableRefusesWhatWouldNotCombine) {
  auto refused = [](const std::string& text, const std::string& says) {
    try {
      ResidualTable::parse(text, "r.tsv");
      ADD_FAILURE() << "accepted: " << text;
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
      EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    }
  };
  refused(kHead, "no line for component 'gemm'");
  refused(std::string(kHead) + "gemm\tg\t1\t1.1\t1.0\t1.2\tx\n", "r.tsv:2: fields q10 <= q50 <= q90");
  refused(std::string(kHead) + "gemm\tg\t1\tnan\t1.0\t1.2\tx\n", "r.tsv:2: field q10 'nan'");
  refused(std::string(kHead) + "gpu\tg\t1\t1\t1\t1\tx\n", "field component 'gpu' is none of gemm, attention");
  refused(std::string(kHead) + "gemm\tg\t1\t1\t1\n", "5 fields, 7 expected");
  refused("gemm\tg\t1\t1\t1\t1\tx\n", "r.tsv:1: the header must be");
}

TEST(PredictionInterval, BuiltinTableCoversEveryComponent) {
  const ResidualTable& t = ResidualTable::builtin();
  EXPECT_FALSE(t.header.empty());
  for (const ComponentResidual& r : t.by_component) {
    EXPECT_FALSE(r.group.empty());
    EXPECT_LE(r.q10, r.q50);
    EXPECT_LE(r.q50, r.q90);
  }
}

// Two ranks on one node (ideal network): GEMM A (1 ms), an all-reduce of 300 MB after it on the
// comm stream, GEMM B (1 ms) after the all-reduce. The all-reduce is exposed: 2 ring steps of
// 150 MB at 300 GB/s plus 2 us each = 1.004 ms. The same pair on two nodes goes over the NIC, and a
// p2p send/recv of the same pair is p2p.
SimResult run_pair(int peer, bool p2p) {
  ClusterSpec c = test_cluster(16);
  Schedule s = make_schedule(c, 16, {{0, peer}}, [peer, p2p](int rank) {
    ProgramWriter w(rank);
    if (rank != 0 && rank != peer) return w.p;
    const TaskId a = w.gemm(1, 1, 1);
    TaskId x;
    if (!p2p) x = w.collective(CollectiveOp::kAllReduce, 0, 300000000, {a});
    else if (rank == 0) x = w.send(peer, 300000000, Stream::kSendFwd, {a});
    else x = w.recv(0, 300000000, Stream::kRecvFwd, {a});
    w.gemm(1, 1, 1, {x});
    return w.p;
  });
  SimOptions o = ideal_options();
  auto t = std::make_shared<CalibrationTable>();
  t->add(Kernel::kGemm, DType::kBf16, {1, 1, 1, 0, 0, 0}, 1e-3);
  o.calibration = t;
  return simulate(s, o);
}

TEST(PredictionInterval, BusyTimeIsAttributedToComponents) {
  const SimResult r = run_pair(1, false);
  const ComponentTimes& b = r.ranks[0].component_s;
  EXPECT_NEAR(r.iteration_time_s, 3.004e-3, 1e-9);
  EXPECT_NEAR(b[size_t(Component::kGemm)], 2e-3, 1e-12);
  EXPECT_NEAR(b[size_t(Component::kNvlink)], 1.004e-3, 1e-9);
  EXPECT_EQ(b[size_t(Component::kNic)], 0);
  EXPECT_EQ(b[size_t(Component::kP2P)], 0);

  const SimResult n = run_pair(8, false);  // rank 8: the second node
  const ComponentTimes& bn = n.ranks[0].component_s;
  EXPECT_NEAR(bn[size_t(Component::kGemm)], 2e-3, 1e-12);
  EXPECT_EQ(bn[size_t(Component::kNvlink)], 0);
  EXPECT_GT(bn[size_t(Component::kNic)], 0);
  EXPECT_NEAR(bn[size_t(Component::kNic)], n.ranks[0].exposed_comm_s, 1e-12);

  const SimResult p = run_pair(1, true);
  const ComponentTimes& bp = p.ranks[0].component_s;
  EXPECT_GT(bp[size_t(Component::kP2P)], 0);
  EXPECT_NEAR(bp[size_t(Component::kP2P)], p.ranks[0].exposed_comm_s, 1e-12);
  EXPECT_EQ(bp[size_t(Component::kNvlink)], 0);
}

TEST(PredictionInterval, AttentionKernelsOfEveryKindAreAttention) {
  // FlashAttention, unfused attention and the ring-attention steps (FlashAttention over a block)
  // are one component; the K/V packing around the ring is a vector kernel.
  for (Kernel k : {Kernel::kAttention, Kernel::kAttentionBwd, Kernel::kRingAttention, Kernel::kRingAttentionBwd}) {
    Compute c;
    c.kernel = k;
    EXPECT_EQ(compute_component(c, false), Component::kAttention) << int(k);
    EXPECT_EQ(compute_component(c, true), Component::kHost) << int(k);
  }
  Compute pack;
  pack.kernel = Kernel::kKvPack;
  EXPECT_EQ(compute_component(pack, false), Component::kVector);
}

TEST(PredictionInterval, JsonCarriesTheIntervalAroundThePoint) {
  const SimResult r = run_pair(1, false);
  ClusterSpec c = test_cluster(16);
  Schedule s = make_schedule(c, 16, {{0, 1}}, [](int rank) { return ProgramWriter(rank).p; });
  std::ostringstream out;
  write_json(out, s, r);
  const std::string j = out.str();
  std::smatch m;
  ASSERT_TRUE(std::regex_search(j, m, std::regex("\"iteration_time_s\": ([0-9.e+-]+)"))) << j;
  const double t = std::stod(m[1]);
  ASSERT_TRUE(std::regex_search(j, m, std::regex("\"iteration_time_interval_s\": \\[([0-9.e+-]+), ([0-9.e+-]+)\\]")))
      << j;
  const double lo = std::stod(m[1]), hi = std::stod(m[2]);
  EXPECT_NEAR(t, 3.004e-3, 1e-9);
  EXPECT_LE(lo, t);
  EXPECT_LE(t, hi);
  EXPECT_LT(lo, hi);  // the builtin residuals are not all exactly 1
  // The busy time it was made of: 2 ms of GEMM, 1.004 ms of NVLink.
  EXPECT_NE(j.find("\"gemm\": 0.002,"), std::string::npos) << j;
  EXPECT_NE(j.find("\"nvlink\": 0.001004"), std::string::npos) << j;
  std::ostringstream text;
  write_summary(text, s, r);
  EXPECT_NE(text.str().find("80 % interval"), std::string::npos) << text.str();
}

}  // namespace
}  // namespace tandem::sim::testing
