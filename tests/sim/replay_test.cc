// The replay's semantics on hand-written schedules: streams, dependencies, contention, memory,
// errors, determinism, and each speed shortcut against the unshortened path.
#include <gtest/gtest.h>

#include <cstring>
#include <map>
#include <sstream>

#include "shared/error.h"
#include "sim/sim_report.h"
#include "sim_test_util.h"

namespace tandem::sim::testing {
namespace {

constexpr double kNic = 25e9;
constexpr int64_t kBytes = int64_t(64) << 20;

// Times for GEMMs named by their dims, so that tests set compute times exactly.
std::shared_ptr<CalibrationTable> times(std::vector<std::pair<int64_t, double>> m_to_s) {
  auto t = std::make_shared<CalibrationTable>();
  for (auto [m, s] : m_to_s) t->add(Kernel::kGemm, DType::kBf16, {m, m, m, 0, 0, 0}, s);
  return t;
}

// Two nodes with ONE NIC each: GPUs 0 and 1 share node 0's NIC, GPUs 8 and 9 node 1's.
Schedule two_allreduces(bool both, int nic_latency_us) {
  ClusterSpec c = test_cluster(16);
  c.nics_per_node = 1;
  c.nic_latency_us = nic_latency_us;
  return make_schedule(c, 16, {{0, 8}, {1, 9}}, [=](int rank) {
    ProgramWriter w(rank);
    if (rank == 0 || rank == 8) w.collective(CollectiveOp::kAllReduce, 0, kBytes);
    if (both && (rank == 1 || rank == 9)) w.collective(CollectiveOp::kAllReduce, 1, kBytes);
    return w.p;
  });
}

TEST(Contention, TwoAllReducesOverOneNicTakeTwiceAsLong) {
  // n = 2: each rank sends 2(n-1)/n * B = B through the shared NIC; alone B / 25 GB/s, two at
  // once share the NIC's 25 GB/s each way, so each takes 2 B / 25 GB/s. Latency zero so that the
  // ratio is exactly 2; with latency only the bandwidth term doubles.
  for (Granularity g : {Granularity::kStep, Granularity::kPhase}) {
    SimOptions o = ideal_options();
    o.granularity = g;
    const double alone = simulate(two_allreduces(false, 0), o).iteration_time_s;
    const double both = simulate(two_allreduces(true, 0), o).iteration_time_s;
    EXPECT_NEAR(alone, kBytes / kNic, 1e-3 * alone);
    EXPECT_NEAR(both / alone, 2.0, 0.01);
    const double both_lat = simulate(two_allreduces(true, 5), o).iteration_time_s;
    EXPECT_NEAR(both_lat, 2.0 * kBytes / kNic + 2 * 5e-6, 0.01 * both_lat);
  }
}

TEST(Contention, OversubscribedLeafUplinkIsShared) {
  // One node per leaf, one 25 GB/s NIC per node, 2:1 oversubscription: a leaf's uplink carries
  // 1 port * 25 / 2 = 12.5 GB/s each way, so a p2p between the two nodes takes B / 12.5 GB/s + 5 us.
  ClusterSpec c = test_cluster(16);
  c.nics_per_node = 1;
  c.oversubscription = 2;
  Schedule s = make_schedule(c, 16, {}, [](int rank) {
    ProgramWriter w(rank);
    if (rank == 0) w.send(8, kBytes, Stream::kSendFwd);
    if (rank == 8) w.recv(0, kBytes, Stream::kRecvFwd);
    return w.p;
  });
  SimOptions o = ideal_options();
  o.fabric.nodes_per_leaf = 1;
  const double t = simulate(s, o).iteration_time_s;
  EXPECT_NEAR(t, kBytes / 12.5e9 + 5e-6, 1e-3 * t);
}

TEST(Contention, StepAndPhaseFlowsAgree) {
  SimOptions step = ideal_options(), phase = ideal_options();
  step.granularity = Granularity::kStep;
  // Eight ranks of one node in a ring all-reduce while a p2p of the same size crosses GPU 0's
  // NVLink port: the two share it whether the ring is one flow per step or per phase. Latency is
  // zero: between steps a step-level ring leaves the port to the p2p for one latency, which a
  // phase-level ring (latency after its flows) does not (docs/sim.md).
  ClusterSpec c = test_cluster(8);
  c.nvlink_latency_us = 0;
  Schedule s = make_schedule(c, 8, {{0, 1, 2, 3, 4, 5, 6, 7}}, [](int rank) {
    ProgramWriter w(rank);
    w.collective(CollectiveOp::kAllReduce, 0, kBytes);
    if (rank == 0) w.send(1, kBytes, Stream::kSendFwd);
    if (rank == 1) w.recv(0, kBytes, Stream::kRecvFwd);
    return w.p;
  });
  const double a = simulate(s, step).iteration_time_s, b = simulate(s, phase).iteration_time_s;
  EXPECT_NEAR(a, b, 0.01 * b);
  // The ring alone would take 2*7/8 B / 300 GB/s; sharing GPU 0's port makes it longer.
  EXPECT_GT(b, 1.05 * 2.0 * 7 / 8 * kBytes / 300e9);
}

TEST(Replay, StreamsOverlapAndDependenciesHold) {
  // Compute: A (1 ms) then B (2 ms) on the compute stream; an all-reduce on the grad-comm stream
  // after A overlaps B; C depends on the all-reduce and on B. A 2-rank all-reduce inside a node of
  // 300 MB: 2(1)/2 * 300e6 / 300e9 + 2 * 2 us = 1.004 ms, so C starts at max(3, 1 + 1.004) = 3 ms
  // and ends at 4 ms.
  ClusterSpec c = test_cluster(2);
  Schedule s = make_schedule(c, 2, {{0, 1}}, [](int rank) {
    ProgramWriter w(rank);
    TaskId a = w.gemm(1, 1, 1);
    TaskId ar = w.collective(CollectiveOp::kAllReduce, 0, 300000000, {a}, Stream::kGradComm);
    TaskId b = w.gemm(2, 2, 2);
    w.gemm(1, 1, 1, {ar, b});
    return w.p;
  });
  for (bool fuse : {true, false}) {
    SimOptions o = ideal_options();
    o.calibration = times({{1, 1e-3}, {2, 2e-3}});
    o.fuse_compute = fuse;
    o.record_tasks = true;
    const SimResult r = simulate(s, o);
    EXPECT_NEAR(r.iteration_time_s, 4e-3, 1e-9);
    ASSERT_EQ(r.tasks.size(), 8u);
    EXPECT_NEAR(r.tasks[1].start_s, 1e-3, 1e-12);                      // all-reduce after A
    EXPECT_NEAR(r.tasks[1].end_s, 1e-3 + 1e-3 + 4e-6, 1e-9);
    EXPECT_NEAR(r.tasks[3].start_s, 3e-3, 1e-12);                      // C after B
    EXPECT_NEAR(r.ranks[0].compute_s, 4e-3, 1e-9);
    EXPECT_NEAR(r.ranks[0].exposed_comm_s, 0.0, 1e-12);                // hidden behind B
  }
}

TEST(Replay, OutOfMemoryIsReportedWithLiveBuffers) {
  // 80 GiB of HBM: rank 0 holds 50 GiB, computes 1 ms, then asks for 40 GiB.
  ClusterSpec c = test_cluster(2);
  Schedule s = make_schedule(c, 2, {}, [](int rank) {
    ProgramWriter w(rank);
    const BufferId a = w.buffer("weights", int64_t(50) << 30);
    const BufferId small = w.buffer("small", 1 << 20);
    const BufferId b = w.buffer("activations", int64_t(40) << 30);
    TaskId t = w.alloc(a);
    t = w.alloc(small, {t});
    t = w.gemm(1, 1, 1, {t});
    if (rank == 0) w.alloc(b, {t});
    return w.p;
  });
  SimOptions o = ideal_options();
  o.calibration = times({{1, 1e-3}});
  const SimResult r = simulate(s, o);
  ASSERT_TRUE(r.oom);
  EXPECT_EQ(r.oom_report.rank, 0);
  EXPECT_NEAR(r.oom_report.time_s, 1e-3, 1e-12);
  EXPECT_EQ(r.oom_report.buffer, "activations");
  EXPECT_EQ(r.oom_report.in_use_bytes, (int64_t(50) << 30) + (1 << 20));
  EXPECT_EQ(r.oom_report.capacity_bytes, int64_t(80) << 30);
  ASSERT_EQ(r.oom_report.live.size(), 2u);
  EXPECT_EQ(r.oom_report.live[0].name, "weights");  // largest first
  EXPECT_EQ(r.oom_report.live[1].name, "small");
  std::ostringstream json;
  write_json(json, s, r);
  EXPECT_NE(json.str().find("\"oom\": true"), std::string::npos);
}

TEST(Replay, PeakMemoryFollowsAllocAndFree) {
  ClusterSpec c = test_cluster(1);
  Schedule s = make_schedule(c, 1, {}, [](int rank) {
    ProgramWriter w(rank);
    const BufferId a = w.buffer("a", 100), b = w.buffer("b", 30), h = w.buffer("h", 7, Placement::kHost);
    TaskId t = w.alloc(a);
    t = w.free(a, {t});
    t = w.alloc(b, {t});
    w.alloc(h, {t});
    return w.p;
  });
  const SimResult r = simulate(s, ideal_options());
  EXPECT_FALSE(r.oom);
  EXPECT_EQ(r.ranks[0].peak_device_bytes, 100);
  EXPECT_EQ(r.ranks[0].peak_host_bytes, 7);
}

TEST(Replay, BadSchedulesAreErrors) {
  ClusterSpec c = test_cluster(2);
  Schedule unmatched = make_schedule(c, 2, {}, [](int rank) {
    ProgramWriter w(rank);
    if (rank == 1) w.recv(0, 10, Stream::kRecvFwd);
    return w.p;
  });
  EXPECT_THROW(simulate(unmatched, ideal_options()), Error);
  Schedule mismatched = make_schedule(c, 2, {{0, 1}}, [](int rank) {
    ProgramWriter w(rank);
    w.collective(CollectiveOp::kAllReduce, 0, rank == 0 ? 10 : 20);
    return w.p;
  });
  EXPECT_THROW(simulate(mismatched, ideal_options()), Error);
  Schedule double_free = make_schedule(c, 1, {}, [](int rank) {
    ProgramWriter w(rank);
    const BufferId a = w.buffer("a", 1);
    w.free(a);
    return w.p;
  });
  EXPECT_THROW(simulate(double_free, ideal_options()), Error);
}

// A small mixed schedule: 16 ranks on 2 nodes, tensor groups of 4 inside the nodes, data groups
// across them; chains of GEMMs, tensor all-reduces on the comm stream, gradient all-reduces on
// the grad-comm stream overlapping compute.
Schedule mixed_schedule() {
  ClusterSpec c = test_cluster(16);
  std::vector<std::vector<int>> groups;
  for (int t = 0; t < 4; ++t) groups.push_back({4 * t, 4 * t + 1, 4 * t + 2, 4 * t + 3});  // tp
  for (int r = 0; r < 8; ++r) groups.push_back({r, r + 8});                               // dp
  return make_schedule(c, 16, groups, [](int rank) {
    ProgramWriter w(rank);
    const GroupId tp = GroupId(rank / 4), dp = GroupId(4 + rank % 8);
    TaskId last = kNoId;
    std::vector<TaskId> grads;
    for (int layer = 0; layer < 4; ++layer) {
      TaskId g1 = w.gemm(1, 1, 1, last == kNoId ? std::vector<TaskId>{} : std::vector<TaskId>{last});
      TaskId g2 = w.gemm(2, 2, 2);
      TaskId ar = w.collective(CollectiveOp::kAllReduce, tp, 8 << 20, {g2});
      last = w.gemm(1, 1, 1, {ar});
      grads.push_back(w.collective(CollectiveOp::kAllReduce, dp, 32 << 20, {last}, Stream::kGradComm));
      (void)g1;
    }
    w.gemm(2, 2, 2, grads);
    return w.p;
  });
}

TEST(Shortcuts, ClosedFormsAndFusionGiveTheUnshortenedTimes) {
  Schedule s = mixed_schedule();
  SimOptions fast;
  fast.calibration = times({{1, 1e-4}, {2, 2e-4}});
  fast.record_tasks = true;
  SimOptions slow = fast;
  slow.closed_form_uncontended = slow.fuse_compute = slow.share_class_programs = false;
  const SimResult a = simulate(s, fast), b = simulate(s, slow);
  EXPECT_GT(a.closed_form_collectives, 0u);  // the tensor groups' NVLink ports see nothing else
  EXPECT_EQ(b.closed_form_collectives, 0u);
  EXPECT_LT(a.events, b.events);
  EXPECT_NEAR(a.iteration_time_s, b.iteration_time_s, 1e-9 * b.iteration_time_s);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    EXPECT_NEAR(a.tasks[i].start_s, b.tasks[i].start_s, 1e-12) << "task " << i;
    EXPECT_NEAR(a.tasks[i].end_s, b.tasks[i].end_s, 1e-12) << "task " << i;
  }
}

TEST(Shortcuts, SharedClassProgramsGiveTheSameTimes) {
  // A generated schedule (tp 2, pp 2, dp 2 on the tiny model): one program per pipeline stage,
  // translated to each rank, against every rank generating its own.
  Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto",
                           {"cluster.gpus=8", "strategy.tp=2", "strategy.pp=2", "strategy.global_batch=16"}));
  SimOptions shared;
  shared.record_tasks = true;
  SimOptions own = shared;
  own.share_class_programs = false;
  const SimResult a = simulate(s, shared), b = simulate(s, own);
  EXPECT_LT(a.programs_generated, b.programs_generated);
  EXPECT_EQ(a.iteration_time_s, b.iteration_time_s);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) EXPECT_EQ(a.tasks[i].end_s, b.tasks[i].end_s) << i;
}

// Tensor-parallel folding (one replayed state per tp group) against every rank replayed, on
// generated schedules where it applies: the same iteration time, the same timing of every task of
// every rank, the same per-rank statistics.
void expect_folding_exact(const std::vector<std::string>& sets, int fold, const SimOptions& base = {}) {
  Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
  SimOptions folded = base;
  folded.record_tasks = folded.record_memory = true;
  folded.fold_data_parallel = false;  // tensor-parallel folding alone (grid folding: replica_fold_test.cc)
  SimOptions unfolded = folded;
  unfolded.fold_tensor_parallel = false;
  SimOptions none = unfolded;
  none.closed_form_uncontended = none.fuse_compute = none.share_class_programs = false;
  const SimResult a = simulate(s, folded), b = simulate(s, unfolded), c = simulate(s, none);
  EXPECT_EQ(a.fold, fold);
  EXPECT_TRUE(a.fold_exact);
  EXPECT_EQ(b.fold, 1);
  EXPECT_EQ(c.fold, 1);
  EXPECT_LT(a.events, b.events);
  EXPECT_EQ(a.flows, b.flows);  // every lane's traffic is still simulated
  EXPECT_EQ(a.collectives, b.collectives);
  EXPECT_NEAR(a.iteration_time_s, b.iteration_time_s, 1e-9 * b.iteration_time_s);
  EXPECT_NEAR(a.iteration_time_s, c.iteration_time_s, 1e-9 * c.iteration_time_s);
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    ASSERT_EQ(a.tasks[i].rank, b.tasks[i].rank);
    ASSERT_EQ(a.tasks[i].task, b.tasks[i].task);
    EXPECT_NEAR(a.tasks[i].start_s, b.tasks[i].start_s, 1e-9 * b.iteration_time_s) << i;
    EXPECT_NEAR(a.tasks[i].end_s, b.tasks[i].end_s, 1e-9 * b.iteration_time_s) << i;
  }
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_EQ(a.ranks[r].peak_device_bytes, b.ranks[r].peak_device_bytes) << r;
    EXPECT_EQ(a.ranks[r].peak_host_bytes, b.ranks[r].peak_host_bytes) << r;
    EXPECT_NEAR(a.ranks[r].compute_s, b.ranks[r].compute_s, 1e-9 * b.iteration_time_s) << r;
    EXPECT_NEAR(a.ranks[r].exposed_comm_s, b.ranks[r].exposed_comm_s, 1e-9 * b.iteration_time_s) << r;
    EXPECT_NEAR(a.ranks[r].idle_s, b.ranks[r].idle_s, 1e-9 * b.iteration_time_s) << r;
  }
  ASSERT_EQ(a.memory.size(), b.memory.size());
  for (size_t i = 0; i < a.memory.size(); ++i) {
    EXPECT_EQ(a.memory[i].rank, b.memory[i].rank);
    EXPECT_EQ(a.memory[i].device_bytes, b.memory[i].device_bytes);
  }
}

TEST(Shortcuts, TensorParallelFoldingGivesTheUnfoldedTimes) {
  // dp 2 x tp 2 x pp 2 with two GPUs per node: each node holds one tp group, whose NVLink ports
  // carry nothing else, so the tp all-reduces are closed-form and the pipeline and gradient
  // traffic crosses the NICs.
  expect_folding_exact({"cluster.gpus=8", "cluster.gpus_per_node=2", "strategy.tp=2", "strategy.pp=2",
                        "strategy.global_batch=16"},
                       2);
}

TEST(Shortcuts, TensorParallelFoldingUnderContention) {
  // tp 4 on nodes of 4 GPUs with ONE NIC each: the four lanes of a unit share their node's NIC,
  // and leaves of one node with a 2:1 oversubscribed uplink add a second shared bottleneck, so
  // pipeline messages and gradient all-reduces of all lanes and replicas contend.
  SimOptions o;
  o.fabric.nodes_per_leaf = 1;
  expect_folding_exact({"cluster.gpus=16", "cluster.gpus_per_node=4", "cluster.nics_per_node=1",
                        "cluster.oversubscription=2", "strategy.tp=4", "strategy.pp=2", "strategy.global_batch=32"},
                       4, o);
}

TEST(Shortcuts, TensorParallelFoldingWithCommOverlap) {
  // strategy.tp_comm_overlap: the tp lanes of a unit exchange blocks in a ring (lane m sends to
  // lane m + 1 mod tp), so the tp group's NVLink ports carry p2p and its collectives are not
  // closed-form; the ports still carry only the unit's own traffic, and the ring is the same seen
  // from every lane, so the unit is folded. Two GPUs per node (one unit per node), then four GPUs
  // and one NIC per node with 2:1 oversubscribed one-node leaves (the Megatron-Core reference
  // settings: Megatron SP, ZeRO-1, overlapped parameter gathers).
  const std::vector<std::string> mc = {"strategy.sp_mode=megatron", "strategy.tp_comm_overlap=true",
                                       "strategy.zero_stage=1", "strategy.overlap_param_gather=true"};
  std::vector<std::string> a = {"cluster.gpus=8", "cluster.gpus_per_node=2", "strategy.tp=2", "strategy.pp=2",
                                "strategy.global_batch=16"};
  a.insert(a.end(), mc.begin(), mc.end());
  expect_folding_exact(a, 2);
  SimOptions o;
  o.fabric.nodes_per_leaf = 1;
  std::vector<std::string> b = {"cluster.gpus=16", "cluster.gpus_per_node=4", "cluster.nics_per_node=1",
                                "cluster.oversubscription=2", "strategy.tp=4", "strategy.pp=2",
                                "strategy.global_batch=32"};
  b.insert(b.end(), mc.begin(), mc.end());
  expect_folding_exact(b, 4, o);
}

// Phases costed alone (a phase whose flows each have their links to themselves ends by a timer at
// bytes / bandwidth, and becomes SimGrid flows of the bytes left when other traffic comes to one
// of its links) against the unshortened replay, where every phase is SimGrid flows.
void expect_alone_phases_exact(const std::vector<std::string>& sets) {
  Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto", sets));
  SimOptions on;
  on.record_tasks = true;
  SimOptions off = on;
  off.closed_form_uncontended = off.fuse_compute = off.share_class_programs = off.fold_tensor_parallel = false;
  const SimResult a = simulate(s, on), b = simulate(s, off);
  EXPECT_TRUE(a.fold_exact);
  EXPECT_EQ(a.flows, b.flows);
  EXPECT_NEAR(a.iteration_time_s, b.iteration_time_s, 1e-9 * b.iteration_time_s);
  // Task records: one per replayed state (folded: lane 0's); compare those of the unfolded run's
  // same rank and task.
  std::map<std::pair<int, TaskId>, const TaskTiming*> by;
  for (const TaskTiming& t : b.tasks) by[{t.rank, t.task}] = &t;
  for (const TaskTiming& t : a.tasks) {
    const TaskTiming* u = by.at({t.rank, t.task});
    EXPECT_NEAR(t.start_s, u->start_s, 1e-9 * b.iteration_time_s) << t.rank << " " << t.task;
    EXPECT_NEAR(t.end_s, u->end_s, 1e-9 * b.iteration_time_s) << t.rank << " " << t.task;
  }
  ASSERT_EQ(a.ranks.size(), b.ranks.size());
  for (size_t r = 0; r < a.ranks.size(); ++r) {
    EXPECT_NEAR(a.ranks[r].exposed_comm_s, b.ranks[r].exposed_comm_s, 1e-9 * b.iteration_time_s) << r;
    EXPECT_NEAR(a.ranks[r].idle_s, b.ranks[r].idle_s, 1e-9 * b.iteration_time_s) << r;
  }
}

TEST(Shortcuts, AlonePhasesGiveTheSharedTimes) {
  // Megatron-Core settings on one node of 8 GPUs, tp 4 x dp 2, small gradient buckets: the tp
  // lanes' ring exchanges and the ZeRO-1 reduce-scatters and all-gathers between the two units
  // use the same NVLink ports, so most phases run alone and some meet other traffic midway
  // (checked when this test was written: two alone phases became SimGrid flows).
  expect_alone_phases_exact({"cluster.gpus=8", "cluster.gpus_per_node=8", "strategy.tp=4", "strategy.global_batch=8",
                             "strategy.bucket_mb=0.05", "strategy.sp_mode=megatron", "strategy.tp_comm_overlap=true",
                             "strategy.zero_stage=1", "strategy.overlap_param_gather=true"});
  // Pipeline and data parallelism across nodes of one GPU: pipeline messages and gradient
  // all-reduces on the NICs.
  expect_alone_phases_exact({"cluster.gpus=8", "cluster.gpus_per_node=1", "strategy.pp=4", "strategy.global_batch=32",
                             "strategy.bucket_mb=0.01"});
}

TEST(Shortcuts, TensorParallelFoldingOnlyWhereExact) {
  // Two tp groups and a pipeline neighbour per node: the tp groups' NVLink ports also carry
  // pipeline messages, so their all-reduces are not closed-form and nothing is folded.
  Schedule s(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto",
                           {"cluster.gpus=8", "cluster.gpus_per_node=4", "strategy.tp=2", "strategy.pp=2",
                            "strategy.global_batch=16"}));
  SimOptions tp_only;
  tp_only.fold_data_parallel = false;
  EXPECT_EQ(simulate(s, tp_only).fold, 1);
  // (Grid folding takes it: a replica per node, a state per stage of 2 replicas x 2 lanes;
  // replica_fold_test.cc checks such cases against the unshortened path.)
  EXPECT_EQ(simulate(s, {}).fold, 4);
  // A hand-written schedule has no tensor-parallel grid: nothing is folded.
  EXPECT_EQ(simulate(mixed_schedule(), {}).fold, 1);
}

TEST(Determinism, SameInputSameOutputBitForBit) {
  Schedule s = mixed_schedule();
  SimOptions o;
  o.calibration = times({{1, 1e-4}, {2, 2e-4}});
  o.record_tasks = o.record_memory = true;
  const SimResult a = simulate(s, o), b = simulate(s, o);
  std::ostringstream ja, jb;
  write_json(ja, s, a);
  write_json(jb, s, b);
  EXPECT_EQ(ja.str(), jb.str());
  ASSERT_EQ(a.tasks.size(), b.tasks.size());
  for (size_t i = 0; i < a.tasks.size(); ++i) {
    EXPECT_EQ(a.tasks[i].rank, b.tasks[i].rank);
    EXPECT_EQ(a.tasks[i].task, b.tasks[i].task);
    EXPECT_EQ(std::memcmp(&a.tasks[i].start_s, &b.tasks[i].start_s, sizeof(double)), 0);
    EXPECT_EQ(std::memcmp(&a.tasks[i].end_s, &b.tasks[i].end_s, sizeof(double)), 0);
  }
}

}  // namespace
}  // namespace tandem::sim::testing
