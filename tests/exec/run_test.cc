// `tandem run` through the real launcher (mpirun, one process per rank): losses equal across
// strategies, the measured trace, peak memory against the planner, and faults.
#include <gtest/gtest.h>
#include <dirent.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <sstream>

#include "shared/memory_timeline.h"
#include "shared/pipeline_memory.h"
#include "shared/schedule.h"
#include "tests/exec/run_test_util.h"
#include "traces/trace_io.h"

namespace tandem {
namespace {

using testing::json_of;
using testing::RunOutput;

RunOutput run(const std::string& args, const std::string& env = "") { return testing::run_tandem(args, env); }

using testing::numbers;

// One run per strategy, shared by the tests of this file.
const testing::Json& result(const std::string& args) { return testing::cached_run_json(args); }

struct Strategy {
  const char* name;
  const char* args;
  const char* base = "-n 1";  // the single-rank run whose losses it must equal
};

// The tiny GPT with a 2304-token vocabulary (2304 = 48^2, divisible by every grid's q and q^2 of
// q 2 and 3): above Colossal-AI's vocab_parallel_limit of 2048, so 2D, 2.5D and 3D take the
// vocabulary-parallel head and loss (shared/tp2d.h, grid_vocab_parallel).
#define VOCAB_PARALLEL " --set model.vocab=2304"
constexpr const char* kVocabBase = "-n 1" VOCAB_PARALLEL;
const Strategy kStrategies[] = {
    {"dp2", "-n 2"},
    {"tp2", "-n 2 --set strategy.tp=2"},
    {"pp2_1f1b", "-n 2 --set strategy.pp=2 --set strategy.pp_schedule=1f1b"},
    {"pp2_gpipe", "-n 2 --set strategy.pp=2 --set strategy.pp_schedule=gpipe"},
    {"tp2_pp2", "-n 4 --set strategy.tp=2 --set strategy.pp=2"},
    {"dp2_zero1", "-n 2 --set strategy.zero_stage=1"},
    {"dp2_zero2", "-n 2 --set strategy.zero_stage=2"},
    {"dp2_zero3", "-n 2 --set strategy.zero_stage=3"},
    {"megatron_sp_tp2", "-n 2 --set strategy.tp=2 --set strategy.sp_mode=megatron"},
    // Megatron-SP's gathers and reduce-scatters as ring exchanges on the tp streams
    // (shared/tp_overlap.cc): row blocks received into views of one buffer while GEMMs run on
    // the others. tp 4 has middle ring steps (forwarded blocks, partial sums received and sent
    // on) that tp 2 has not.
    {"tp2_megatron_overlap", "-n 2 --set strategy.tp=2 --set strategy.sp_mode=megatron --set software.tp_comm_overlap=true"},
    {"tp4_megatron_overlap", "-n 4 --set strategy.tp=4 --set strategy.sp_mode=megatron --set software.tp_comm_overlap=true"},
    {"full_recompute", "-n 1 --set strategy.recompute=full"},
    // 2D tensor parallelism (Optimus SUMMA, shared/tp2d.h) on a 2 x 2 grid, alone and with a data-
    // or pipeline-parallel axis (the tied table's copy on the last stage), and with selective
    // recompute.
    {"tp2d_q2", "-n 4 --set strategy.tp=4 --set strategy.tp_mode=2d"},
    {"tp2d_q2_dp2_zero1", "-n 8 --set strategy.tp=4 --set strategy.tp_mode=2d --set strategy.zero_stage=1"},
    {"tp2d_q2_pp2", "-n 8 --set strategy.tp=4 --set strategy.tp_mode=2d --set strategy.pp=2"},
    {"tp2d_q2_selective", "-n 4 --set strategy.tp=4 --set strategy.tp_mode=2d --set strategy.recompute=selective"},
    // 2.5D (Tesseract): two depth layers of 2 x 2, each micro-batch of 4 split over the 4 rows.
    {"tp2p5d_q2_d2", "-n 8 --set strategy.tp=8 --set strategy.tp_mode=2.5d --set strategy.tp_depth=2 "
                     "--set strategy.micro_batch=4"},
    // The vocabulary-parallel head and loss (VocabParallelClassifier2D / 3D with
    // VocabParallelCrossEntropy2D / 2p5D / 3D): 2D alone, with PP 2 and with ZeRO-1 DP 2; 2.5D;
    // 3D (its logits on another batch block than its embedding: the head loads its own targets).
    {"tp2d_q2_vocab_parallel", "-n 4 --set strategy.tp=4 --set strategy.tp_mode=2d" VOCAB_PARALLEL, kVocabBase},
    {"tp2d_q2_pp2_vocab_parallel",
     "-n 8 --set strategy.tp=4 --set strategy.tp_mode=2d --set strategy.pp=2" VOCAB_PARALLEL, kVocabBase},
    {"tp2d_q2_dp2_zero1_vocab_parallel",
     "-n 8 --set strategy.tp=4 --set strategy.tp_mode=2d --set strategy.zero_stage=1" VOCAB_PARALLEL, kVocabBase},
    {"tp2p5d_q2_d2_vocab_parallel",
     "-n 8 --set strategy.tp=8 --set strategy.tp_mode=2.5d --set strategy.tp_depth=2 --set strategy.micro_batch=4"
     VOCAB_PARALLEL, kVocabBase},
    {"tp3d_q2_vocab_parallel",
     "-n 8 --set strategy.tp=8 --set strategy.tp_mode=3d --set strategy.micro_batch=4" VOCAB_PARALLEL, kVocabBase},
    // 3D (shared/tp3d.h): a 2 x 2 x 2 cube, each micro-batch of 4 split into 4 batch blocks; with
    // SwiGLU (its gate and up weights gathered apart) checked by hand (docs/tp_modes.md).
    {"tp3d_q2", "-n 8 --set strategy.tp=8 --set strategy.tp_mode=3d --set strategy.micro_batch=4"},
    {"tp3d_q2_full_recompute",
     "-n 8 --set strategy.tp=8 --set strategy.tp_mode=3d --set strategy.micro_batch=4 --set strategy.recompute=full"},
    // Sequence parallelism over the sp axis (docs/sequence.md): Ulysses' all-to-alls (tiny-gpt's
    // micro-batch of 2 exercises the batch dimension of the packing), alone, with a data-parallel
    // pair (gradients reduced over the data-and-sequence group of 4), with TP, PP and ZeRO.
    {"ulysses_sp2", "-n 2 --set strategy.sp=2 --set strategy.sp_mode=ulysses"},
    {"ulysses_sp4", "-n 4 --set strategy.sp=4 --set strategy.sp_mode=ulysses"},
    {"ulysses_sp2_dp2", "-n 4 --set strategy.sp=2 --set strategy.sp_mode=ulysses"},
    {"ulysses_sp2_tp2", "-n 4 --set strategy.sp=2 --set strategy.sp_mode=ulysses --set strategy.tp=2"},
    {"ulysses_sp2_pp2", "-n 4 --set strategy.sp=2 --set strategy.sp_mode=ulysses --set strategy.pp=2"},
    {"ulysses_sp2_dp2_zero3", "-n 4 --set strategy.sp=2 --set strategy.sp_mode=ulysses --set strategy.zero_stage=3"},
    // Ring attention (causal, zig-zag split): K/V blocks around the ring, the dK/dV sums back home.
    {"ring_attention_sp2", "-n 2 --set strategy.sp=2 --set strategy.sp_mode=ring_attention"},
    {"ring_attention_sp4", "-n 4 --set strategy.sp=4 --set strategy.sp_mode=ring_attention"},
    {"ring_attention_sp2_dp2", "-n 4 --set strategy.sp=2 --set strategy.sp_mode=ring_attention"},
    {"ring_attention_sp2_pp2", "-n 4 --set strategy.sp=2 --set strategy.sp_mode=ring_attention --set strategy.pp=2"},
    {"ring_attention_sp2_tp2", "-n 4 --set strategy.sp=2 --set strategy.sp_mode=ring_attention --set strategy.tp=2"},
    // Colossal-AI's ring self-attention (sp_mode ring, shared/ring_self_attention.h): key and value
    // blocks around the ring, dK and dV all-reduced over the sequence group.
    {"ring_sp2", "-n 2 --set strategy.sp=2 --set strategy.sp_mode=ring"},
    {"ring_sp4", "-n 4 --set strategy.sp=4 --set strategy.sp_mode=ring"},
    {"ring_sp2_dp2", "-n 4 --set strategy.sp=2 --set strategy.sp_mode=ring"},
    {"ring_sp2_pp2", "-n 4 --set strategy.sp=2 --set strategy.sp_mode=ring --set strategy.pp=2"},
    // The sp 4 runs with a second axis too (8 processes): ring self-attention with PP 2,
    // ring attention with DP 2 (the data-and-sequence group of 8).
    {"ring_sp4_pp2", "-n 8 --set strategy.sp=4 --set strategy.sp_mode=ring --set strategy.pp=2"},
    {"ring_attention_sp4_dp2", "-n 8 --set strategy.sp=4 --set strategy.sp_mode=ring_attention"},
    {"ring_attention_sp2_full_recompute",
     "-n 2 --set strategy.sp=2 --set strategy.sp_mode=ring_attention --set strategy.recompute=full"},
    // Heterogeneous memory (docs/offload.md): real copies between the driver's device and host
    // arenas. Optimizer offload (ZeRO-Offload) alone and with ZeRO-3; parameter offload at 0.5 of
    // the Gemini chunks (chunk_min_m 0 and chunk_search_range_m 0 give the tiny GPT 6 chunks, 3 on
    // the host: tests/shared/offload_schedule_test.cc), alone and ZeRO-3 over 2 ranks.
    {"offload_optimizer", "-n 1 --set strategy.offload=optimizer"},
    {"dp2_zero3_offload_optimizer", "-n 2 --set strategy.zero_stage=3 --set strategy.offload=optimizer"},
    {"offload_params_half", "-n 1 --set strategy.offload=params --set strategy.offload_fraction=0.5 "
                            "--set strategy.chunk_min_m=0 --set strategy.chunk_search_range_m=0"},
    {"dp2_zero3_offload_params_half", "-n 2 --set strategy.zero_stage=3 --set strategy.offload=params "
                                      "--set strategy.offload_fraction=0.5 --set strategy.chunk_min_m=0 "
                                      "--set strategy.chunk_search_range_m=0"},
    // Gemini's auto placement under an HBM of 0.003 GiB, which the program with every parameter
    // chunk on the device exceeds (AutoOffloadStaysUnderTheHbmLimit), alone and ZeRO-3 over 2 ranks;
    // every chunk's optimizer state on the host either way.
    {"offload_auto_hbm", "-n 1 --set strategy.offload=auto --set cluster.hbm_gib=0.003 "
                         "--set strategy.chunk_min_m=0 --set strategy.chunk_search_range_m=0"},
    {"dp2_zero3_offload_auto_hbm", "-n 2 --set strategy.zero_stage=3 --set strategy.offload=auto "
                                   "--set cluster.hbm_gib=0.003 --set strategy.chunk_min_m=0 "
                                   "--set strategy.chunk_search_range_m=0"},
    // Gemini's gpu_margin_mem_ratio (tests/shared/offload_margin_test.cc): 2.5e-5 of the 80 GiB
    // margin over 4 is 537 kB of fp32 shards: 2 of the 6 chunks (197 632 B each) on one rank, 5 of
    // their halves over 2 ranks, keep their optimizer states and Adam on the device.
    {"offload_auto_margin", "-n 1 --set strategy.offload=auto --set strategy.gpu_margin_mem_ratio=2.5e-5 "
                            "--set strategy.chunk_min_m=0 --set strategy.chunk_search_range_m=0"},
    {"dp2_zero3_offload_auto_margin", "-n 2 --set strategy.zero_stage=3 --set strategy.offload=auto "
                                      "--set strategy.gpu_margin_mem_ratio=2.5e-5 --set strategy.chunk_min_m=0 "
                                      "--set strategy.chunk_search_range_m=0"},
    // Per-operator eviction worked by hand (OffloadAuto.EvictsPerOperatorFurthestNextUseFirst,
    // tests/shared/offload_schedule_test.cc): the tiny GPT at hidden 256, one 8-token sequence,
    // full recompute, 0.0245 GiB: L0, L3 and the head's chunks move up and down during the step.
    {"offload_auto_per_operator",
     "-n 1 --set strategy.offload=auto --set cluster.hbm_gib=0.0245 --set strategy.chunk_min_m=0 "
     "--set strategy.chunk_search_range_m=0 --set model.hidden=256 --set model.seq_len=8 "
     "--set strategy.micro_batch=1 --set strategy.global_batch=1 --set strategy.recompute=full",
     "-n 1 --set model.hidden=256 --set model.seq_len=8 --set strategy.micro_batch=1 --set strategy.global_batch=1 "
     "--set strategy.recompute=full"},
};

void PrintTo(const Strategy& s, std::ostream* os) { *os << s.name; }

class StrategyRun : public ::testing::TestWithParam<Strategy> {};

TEST(TandemRun, SingleRankLossFalls) {
  const std::vector<double> base = numbers(result("-n 1").at("losses"));
  ASSERT_EQ(base.size(), 5u);
  for (size_t i = 1; i < base.size(); ++i) EXPECT_LT(base[i], base[i - 1]) << "step " << i + 1;
  // Never below the data's entropy (the floor, exec/synthetic_data.h).
  EXPECT_GT(base.back(), result("-n 1").at("loss_floor").number);
}

TEST_P(StrategyRun, LossesEqualTheSingleRankLosses) {
  const std::vector<double> base = numbers(result(GetParam().base).at("losses"));
  const std::vector<double> got = numbers(result(GetParam().args).at("losses"));
  ASSERT_EQ(got.size(), base.size());
  // fp32: the strategies sum the same products in other orders (split GEMMs, all-reduces), so
  // they agree to a few float roundings, far inside the 1e-5 relative.
  for (size_t i = 0; i < base.size(); ++i) EXPECT_NEAR(got[i], base[i], 1e-5 * std::abs(base[i])) << "step " << i + 1;
}

TEST_P(StrategyRun, PeakMemoryIsThePlanners) {
  const Strategy& st = GetParam();
  std::vector<std::string> sets;
  std::istringstream in(st.args);
  std::string w, n;
  while (in >> w) {
    if (w == "--set") in >> w, sets.push_back(w);
    else if (w == "-n") in >> n, sets.push_back("cluster.gpus=" + n);
  }
  Schedule s(load_scenario(testing::kTinyScenario, sets));
  const std::vector<double> measured = numbers(result(st.args).at("peak_memory_bytes_per_rank"));
  ASSERT_EQ(int(measured.size()), s.world_size());
  // The planner's figure: the program-order walk, pipeline-aware with pp > 1 (a sent buffer lives
  // until the peer has posted its receive; shared/pipeline_memory.h).
  const std::vector<double> reported = numbers(result(st.args).at("planned_peak_memory_bytes_per_rank"));
  ASSERT_EQ(int(reported.size()), s.world_size());
  for (int r = 0; r < s.world_size(); ++r) {
    const double planned = double(memory_profile(s, r).peak_device_bytes);
    EXPECT_EQ(reported[r], planned) << "rank " << r;  // what `tandem run` prints as planned
    // The planner walks roofline times; how long a sent buffer waits for the peer's receive
    // depends on the stages' real paces (a stage the OS delays holds more), so with pp > 1 the
    // run is checked against the range over paces (shared/pipeline_memory.h). Without pipeline
    // messages the range is the planned figure.
    const PeakRange range = pipeline_peak_range(s, r);
    EXPECT_LE(double(range.least_bytes), planned) << "rank " << r;
    EXPECT_GE(double(range.most_bytes), planned) << "rank " << r;
    EXPECT_GE(measured[r], 0.99 * double(range.least_bytes)) << "rank " << r;
    EXPECT_LE(measured[r], 1.01 * double(range.most_bytes)) << "rank " << r;
  }
}

TEST(TandemRun, AutoOffloadStaysUnderTheHbmLimit) {
  // The cap: 0.9 (Gemini's steady_cuda_cap_ratio) of 0.003 GiB = 2 899 102 bytes. The same
  // strategy with 80 GiB (every parameter chunk on the device) plans a peak above it: auto had to
  // evict parameter chunks.
  const int64_t cap = int64_t(0.9 * double(int64_t(0.003 * 1073741824.0)));
  for (const auto& [args, sets] : std::vector<std::pair<std::string, std::vector<std::string>>>{
           {"-n 1 --set strategy.offload=auto --set cluster.hbm_gib=0.003 --set strategy.chunk_min_m=0 "
            "--set strategy.chunk_search_range_m=0",
            {"cluster.gpus=1", "strategy.offload=auto", "strategy.chunk_min_m=0", "strategy.chunk_search_range_m=0"}},
           {"-n 2 --set strategy.zero_stage=3 --set strategy.offload=auto --set cluster.hbm_gib=0.003 "
            "--set strategy.chunk_min_m=0 --set strategy.chunk_search_range_m=0",
            {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.offload=auto", "strategy.chunk_min_m=0",
             "strategy.chunk_search_range_m=0"}}}) {
    const std::vector<double> measured = numbers(result(args).at("peak_memory_bytes_per_rank"));
    for (double m : measured) EXPECT_LE(m, double(cap)) << args;
    const Schedule all_device(load_scenario(testing::kTinyScenario, sets));
    EXPECT_GT(memory_profile(all_device, 0).peak_device_bytes, cap) << args;
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, StrategyRun, ::testing::ValuesIn(kStrategies),
                         [](const auto& info) { return std::string(info.param.name); });

TEST(TandemRun, TraceHoldsEveryTaskOnceInScheduleOrder) {
  const std::string path = ::testing::TempDir() + "/exec_trace_" + std::to_string(getpid()) + ".pb";
  const std::string args = "-n 4 --set strategy.tp=2 --set strategy.pp=2 --steps 2 --trace " + path;
  const RunOutput r = run(args);
  ASSERT_EQ(r.exit_code, 0) << r.out;
  const proto::Trace t = read_trace(path);
  EXPECT_EQ(t.backend(), "host");
  Schedule s(load_scenario(testing::kTinyScenario, {"cluster.gpus=4", "strategy.tp=2", "strategy.pp=2"}));
  ASSERT_EQ(t.ranks_size(), 4);
  // The ranks' times share one origin (exec/step_origin.h), so what ran at once on several ranks is
  // read from it: an all-reduce, all-gather or reduce-scatter cannot end on any member before every
  // member has started it (each member's result needs every member's data). Per instance (group,
  // n-th of the group on a rank): the latest start <= the earliest end, to 1 ns (the origins are
  // seconds of the monotonic clock in doubles: ~1e-10 s of rounding).
  std::map<std::pair<GroupId, int>, std::pair<double, double>> instances;  // latest start, earliest end
  double first_start = HUGE_VAL;
  for (const proto::Rank& rk : t.ranks()) {
    const Program p = s.program(rk.rank());
    std::map<GroupId, int> nth;
    const proto::Events& e = rk.events();
    for (int i = 0; i < e.task_id_size(); ++i) {
      first_start = std::min(first_start, e.start_s(i));
      const Collective* c = std::get_if<Collective>(&p.tasks[e.task_id(i)].op);
      if (!c || (c->op != CollectiveOp::kAllReduce && c->op != CollectiveOp::kAllGather &&
                 c->op != CollectiveOp::kReduceScatter))
        continue;
      auto [it, added] = instances.try_emplace({c->group, nth[c->group]++}, e.start_s(i), e.end_s(i));
      if (!added) it->second = {std::max(it->second.first, e.start_s(i)), std::min(it->second.second, e.end_s(i))};
    }
  }
  EXPECT_FALSE(instances.empty());
  for (const auto& [inst, span] : instances)
    EXPECT_LE(span.first, span.second + 1e-9) << "group " << inst.first << " collective " << inst.second;
  // The origin is the earliest rank's start of the step: its first task starts at it, or just after.
  EXPECT_GE(first_start, 0);
  for (const proto::Rank& rk : t.ranks()) {
    const Program p = s.program(rk.rank());
    const proto::Events& e = rk.events();
    ASSERT_EQ(size_t(e.task_id_size()), p.tasks.size()) << "rank " << rk.rank();
    std::vector<double> start(p.tasks.size()), end(p.tasks.size());
    for (int i = 0; i < e.task_id_size(); ++i) {
      ASSERT_EQ(e.task_id(i), uint32_t(i)) << "rank " << rk.rank();  // each task once, ids in order
      EXPECT_EQ(e.stream(i), uint32_t(p.tasks[i].stream));
      start[i] = e.start_s(i), end[i] = e.end_s(i);
      EXPECT_GE(end[i], start[i]);
    }
    std::vector<TaskId> last(kStreamCount, kNoId);
    for (const Task& task : p.tasks) {
      for (TaskId d : task.deps) EXPECT_LE(end[d], start[task.id]) << "rank " << rk.rank() << " task " << task.id;
      TaskId& prev = last[int(task.stream)];
      if (prev != kNoId) {
        EXPECT_LE(end[prev], start[task.id]) << "rank " << rk.rank() << " task " << task.id;
      }
      prev = task.id;
    }
    EXPECT_GT(rk.peak_device_bytes(), 0);
  }
  std::remove(path.c_str());
}

// Processes still alive whose environment holds `token`.
int processes_with(const std::string& token) {
  int n = 0;
  DIR* d = opendir("/proc");
  while (dirent* e = readdir(d)) {
    if (e->d_name[0] < '0' || e->d_name[0] > '9') continue;
    std::ifstream env(std::string("/proc/") + e->d_name + "/environ", std::ios::binary);
    std::string s((std::istreambuf_iterator<char>(env)), std::istreambuf_iterator<char>());
    if (s.find(token) != std::string::npos) ++n;
  }
  closedir(d);
  return n;
}

TEST(TandemRun, KilledRankEndsTheJobWithAFailure) {
  const std::string token = "TANDEM_TEST_TOKEN=kill" + std::to_string(getpid());
  const RunOutput r = run("-n 2 --timeout 20", "env " + token + " TANDEM_EXEC_FAULT=kill:1:2");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.exit_code, 124) << "the job outlived the guard timeout:\n" << r.out;
  EXPECT_EQ(processes_with(token), 0) << "ranks left behind";
}

TEST(TandemRun, HungRankIsReportedAndTheJobAborted) {
  const std::string token = "TANDEM_TEST_TOKEN=hang" + std::to_string(getpid());
  const RunOutput r = run("-n 2 --timeout 3", "env " + token + " TANDEM_EXEC_FAULT=hang:1:2");
  EXPECT_NE(r.exit_code, 0) << r.out;
  EXPECT_NE(r.exit_code, 124) << "the job outlived the guard timeout:\n" << r.out;
  // Rank 0 waits for rank 1 at the step barrier or in a collective, and says so; rank 1 never
  // reports a stall of its own, so the job names it.
  EXPECT_NE(r.out.find("rank 0: no progress for"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("rank 1 stopped making progress"), std::string::npos) << r.out;
  EXPECT_EQ(processes_with(token), 0) << "ranks left behind";
}

// A rank stopped by SIGSTOP inside a step (exec/rank_worker.cc's "stop" fault, after the step
// barrier): the others wait on it in collectives and messages, report what they wait on, and the
// job names the stopped rank, exits with the stall's code 4 and leaves no process behind.
void expect_stopped_rank_named(const std::string& args, int stopped, const std::string& name) {
  const std::string token = "TANDEM_TEST_TOKEN=" + name + std::to_string(getpid());
  const RunOutput r =
      run(args + " --timeout 3", "env " + token + " TANDEM_EXEC_FAULT=stop:" + std::to_string(stopped) + ":2");
  EXPECT_EQ(r.exit_code, 4) << r.out;  // ErrorKind::kStalled; 124 would be the guard timeout
  const std::string verdict = "tandem run: rank " + std::to_string(stopped) + " stopped making progress";
  EXPECT_NE(r.out.find(verdict), std::string::npos) << r.out;
  for (int other = 0; other < 4; ++other)
    if (other != stopped) {
      EXPECT_EQ(r.out.find("rank " + std::to_string(other) + " stopped"), std::string::npos) << r.out;
    }
  EXPECT_EQ(processes_with(token), 0) << "ranks left behind";
}

TEST(TandemRun, StoppedRankIsNamedTwoRanks) { expect_stopped_rank_named("-n 2", 1, "stop2_"); }

TEST(TandemRun, StoppedRankIsNamedTensorAndPipelineParallel) {
  // tp 2 x pp 2: rank 3's tp peer (2) waits in an all-reduce with it, rank 1 on a message to it,
  // rank 0 on a message to rank 2, which waits itself.
  expect_stopped_rank_named("-n 4 --set strategy.tp=2 --set strategy.pp=2", 3, "stop4_");
}

TEST(TandemRun, Fp8RunsInFp32OnTheHostAndSaysSo) {
  // The CPU has no FP8: the host driver runs the fp32 step (the same losses as the fp32 run, the
  // cluster figures do not enter the math) and says so on stderr. tiny-gpt's A100 preset has no
  // FP8, hence the H100 preset.
  const RunOutput r = run("-n 1 --json --set cluster.preset=dgx-h100 --set strategy.dtype=fp8");
  ASSERT_EQ(r.exit_code, 0) << r.out;
  EXPECT_NE(r.out.find("strategy.dtype fp8: the host driver computes this run in fp32"), std::string::npos) << r.out;
  EXPECT_EQ(numbers(json_of(r).at("losses")), numbers(result("-n 1").at("losses")));
}

TEST(TandemRun, BadInputExitsTwoBeforeLaunching) {
  RunOutput r = run("-n 1 --set strategy.dtype=fp16");
  EXPECT_EQ(r.exit_code, 2) << r.out;
  EXPECT_NE(r.out.find("fp32"), std::string::npos) << r.out;
  // Without the CUDA driver (built where CUDA is found) or without a GPU, --driver cuda is bad
  // input; on a GPU machine it runs.
  r = run("-n 1 --driver cuda");
  if (r.exit_code != 0) {
    EXPECT_EQ(r.exit_code, 2) << r.out;
    EXPECT_TRUE(r.out.find("not built") != std::string::npos || r.out.find("no CUDA device") != std::string::npos)
        << r.out;
  }
  r = run("-n 3 --set strategy.tp=2");
  EXPECT_EQ(r.exit_code, 2) << r.out;
}

}  // namespace
}  // namespace tandem
