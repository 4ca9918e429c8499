// Hostile input to the scenario loader and the generators (issue 11): files that are not regular
// files, numbers out of range or past 64-bit arithmetic, octal-looking integers, unterminated
// quotes, rules the simulator would meet too late, and programs too large to generate. Each test
// names a reproducer that was accepted (or hung, or aborted) before, and asserts the refusal:
// exit code 2 (bad input), the location (file:line or the --set itself), the field and the rule.
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "shared/error.h"
#include "shared/program_builder.h"
#include "shared/program_size.h"
#include "shared/scenario.h"
#include "shared/schedule.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

const std::string kTiny = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";

std::string error_of(const std::string& path, const std::vector<std::string>& sets = {}) {
  try {
    load_scenario(path, sets);
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for " << path;
  return "";
}

std::string text_error_of(const std::string& text) {
  try {
    parse_scenario(text, "bad.textproto");
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return "";
}

bool starts_with(const std::string& s, const std::string& head) { return s.rfind(head, 0) == 0; }
bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// A --set on tiny-gpt refused at the --set itself: "--set A (over FILE): FIELD: RULE".
void expect_set_refused(const std::string& assignment, const std::vector<std::string>& words) {
  const std::string message = error_of(kTiny, {assignment});
  SCOPED_TRACE(message);
  const std::string field = assignment.substr(0, assignment.find('='));
  EXPECT_TRUE(starts_with(message, "--set " + assignment + " (over " + kTiny + "): " + field + ": ")) << message;
  for (const std::string& w : words) EXPECT_TRUE(contains(message, w)) << w;
}

const char* kModel = "model { layers: 4 hidden: 64 heads: 4 vocab: 256 seq_len: 32 }\n";

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("tandem-hostile-" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string path(const std::string& name) const { return (path_ / name).string(); }

 private:
  fs::path path_;
};

// ---------------------------------------------------------------------------------------------
// Files: /dev/zero never ended; a directory read as empty; a FIFO without a writer blocked.

TEST(hostile_input, ScenarioMustBeARegularFile) {
  EXPECT_TRUE(contains(error_of("/dev/zero"), "/dev/zero: cannot read scenario: not a regular file"));
  TempDir dir;
  EXPECT_TRUE(contains(error_of(dir.path("")), "cannot read scenario: it is a directory"));
  const std::string fifo = dir.path("fifo");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(contains(error_of(fifo), fifo + ": cannot read scenario: not a regular file"));
}

TEST(hostile_input, PresetThatIsNotAFileNamesTheProblemAndThePresets) {
  // Before: a directory read as an empty preset, and the loader said gpus_per_node was not set.
  const std::string message = error_of(kTiny, {"cluster.preset=/tmp"});
  EXPECT_TRUE(starts_with(message, "--set cluster.preset=/tmp (over " + kTiny + "): cluster.preset: cannot read "
                                   "preset file \"/tmp\": it is a directory"))
      << message;
  EXPECT_TRUE(contains(message, "the presets are dgx-a100-80g, dgx-h100, hgx-h200, host")) << message;
  EXPECT_FALSE(contains(message, "gpus_per_node")) << message;

  TempDir dir;
  const std::string fifo = dir.path("preset.textproto");
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_TRUE(contains(error_of(kTiny, {"cluster.preset=" + fifo}), "not a regular file"));
  EXPECT_TRUE(contains(error_of(kTiny, {"cluster.preset=/dev/zero"}), "not a regular file"));
}

// ---------------------------------------------------------------------------------------------
// Numbers: finite, within the physical bounds of shared/scenario_limits.h, within int64.

TEST(hostile_input, HardwareFiguresMustBeFiniteAndPhysical) {
  // inf and 1e300 NVLink bandwidth aborted SimGrid; an infinite NIC latency hung the simulation.
  expect_set_refused("cluster.nvlink_bandwidth_gbps=inf", {"must be a finite number, got inf"});
  expect_set_refused("cluster.nvlink_bandwidth_gbps=nan", {"must be a finite number, got nan"});
  expect_set_refused("cluster.nvlink_bandwidth_gbps=1e300", {"must be at most 1e+06 GB/s", "got 1e+300"});
  expect_set_refused("cluster.nvlink_latency_us=inf", {"must be a finite number"});
  expect_set_refused("cluster.nic_latency_us=inf", {"must be a finite number"});
  expect_set_refused("cluster.kernel_launch_us=inf", {"must be a finite number"});
  expect_set_refused("cluster.kernel_launch_us=2e6", {"at most 1e+06 us (one second)"});
  expect_set_refused("cluster.peak_bf16_tflops=1e7", {"at most 1e+06 TFLOP/s"});
  // 9e9 GiB is 9.7e18 bytes, past int64 (9.2e18): the plan printed a negative HBM size.
  expect_set_refused("cluster.hbm_gib=9e9", {"at most 1e+06 GiB"});
  expect_set_refused("cluster.oversubscription=inf", {"must be a finite number"});
  expect_set_refused("strategy.bucket_mb=inf", {"must be a finite number"});
  // The bounds themselves are allowed.
  EXPECT_EQ(load_scenario(kTiny, {"cluster.nvlink_bandwidth_gbps=1e6"}).cluster.nvlink_bandwidth_gbps, 1e6);
  EXPECT_EQ(load_scenario(kTiny, {"cluster.nic_latency_us=1e6"}).cluster.nic_latency_us, 1e6);

  // In a file the message names its line.
  const std::string text = std::string(kModel) + "cluster {\n  preset: \"dgx-a100-80g\"\n  gpus: 1\n"
                                                 "  nic_latency_us: inf\n}\n";
  EXPECT_TRUE(starts_with(text_error_of(text), "bad.textproto:5: cluster.nic_latency_us: must be a finite number"));
}

TEST(hostile_input, CountsAreBounded) {
  // 10^9 layers hung the generator; 2^30 GPUs was refused only by an unrelated rule.
  expect_set_refused("model.layers=1000000000", {"must be at most 65536", "got 1000000000"});
  expect_set_refused("cluster.gpus=1073741824", {"must be at most 1048576"});
  // 2^30 tokens per sequence: the attention scores (b*a*s^2 elements) wrapped the peak memory.
  expect_set_refused("model.seq_len=1073741824", {"must be at most 16777216"});
  expect_set_refused("strategy.micro_batch=1073741824", {"must be at most 1048576"});
  // Not an integer at all: refused by the parser, at the --set.
  const std::string message = error_of(kTiny, {"model.layers=1e9"});
  EXPECT_TRUE(starts_with(message, "--set model.layers=1e9: model.layers takes an int32")) << message;
}

TEST(hostile_input, DerivedSizesMustFitIn64Bits) {
  // Every count within its bound, but the attention scores of a micro-batch are
  // 2^20 x 4 x 2^24 x 2^24 x 4 bytes = 2^72: refused at seq_len (its --set), with the formula.
  const std::vector<std::string> big = {"strategy.micro_batch=1048576", "strategy.global_batch=1048576",
                                        "model.seq_len=16777216"};
  const std::string message = error_of(kTiny, big);
  EXPECT_TRUE(starts_with(message, "--set model.seq_len=16777216 (over " + kTiny +
                                       "): model.seq_len: the attention scores of a micro-batch"))
      << message;
  EXPECT_TRUE(contains(message, "1048576 x 4 x 16777216 x 16777216 x 4 is beyond what 64-bit arithmetic holds"))
      << message;
  // Flash attention keeps no scores: the largest buffers are then the logits, 2^20 x 2^24 x 256 x 4 = 2^54.
  std::vector<std::string> flash = big;
  flash.push_back("strategy.flash_attention=true");
  EXPECT_EQ(load_scenario(kTiny, flash).model.seq_len, 16777216);

  // 65536 layers of hidden 2^20 and ffn 2^22: 12.4e17 parameters fit, their 20 bytes each do not.
  const std::string state = error_of(kTiny, {"model.layers=65536", "model.hidden=1048576", "model.ffn_hidden=4194304"});
  EXPECT_TRUE(contains(state, "model: the model state, parameters x 20 bytes")) << state;
  EXPECT_TRUE(contains(state, "beyond what 64-bit arithmetic holds")) << state;
}

// ---------------------------------------------------------------------------------------------
// Syntax: octal-looking integers, unterminated quotes.

TEST(hostile_input, LeadingZerosAreRefusedNotReadAsOctal) {
  // --set model.layers=010 gave an 8-layer model.
  const std::string set = error_of(kTiny, {"model.layers=010"});
  EXPECT_TRUE(starts_with(set, "--set model.layers=010: model.layers: the integer 010 has a leading zero")) << set;
  EXPECT_TRUE(contains(set, "decimal only: write 10")) << set;
  EXPECT_TRUE(contains(error_of(kTiny, {"strategy.tp=-02"}), "the integer 02 has a leading zero"));
  // Line 2, column 40: `cluster { preset: "dgx-a100-80g" gpus: ` is 39 characters.
  const std::string file = text_error_of(std::string(kModel) + "cluster { preset: \"dgx-a100-80g\" gpus: 01 }\n");
  EXPECT_TRUE(starts_with(file, "bad.textproto:2:40: the integer 01 has a leading zero")) << file;
  // A plain 0 and a double with leading zeros are read as written.
  EXPECT_EQ(load_scenario(kTiny, {"strategy.dp=0"}).strategy.dp, 1);
  EXPECT_EQ(load_scenario(kTiny, {"model.dropout=0.010"}).model.dropout, 0.01);
}

// Integers are exact decimal, or refused naming the field: in a --set (the --set itself) and in a
// file (file:line:column, the field, the line). Before: 0x10 was read as 16, `5 # note` as 5,
// " 5" and "- 5" as written; a file's parse error named no field.
TEST(hostile_input, IntegersAreExactDecimal) {
  const std::string hex = error_of(kTiny, {"model.layers=0x10"});
  EXPECT_TRUE(starts_with(hex, "--set model.layers=0x10: model.layers: the integer 0x10 is hexadecimal; tandem "
                               "takes decimal only"))
      << hex;
  EXPECT_TRUE(contains(error_of(kTiny, {"model.layers=0X10"}), "the integer 0X10 is hexadecimal"));
  EXPECT_TRUE(contains(error_of(kTiny, {"model.layers=0x"}), "the integer 0x is hexadecimal"));  // was read as 0
  // Not decimal digits after an optional minus: refused with what the field takes.
  for (const std::string v : {"+5", " 5", "5 ", "5 # note", "- 5", "--5", "", "5 6"}) {
    const std::string m = error_of(kTiny, {"model.layers=" + v});
    EXPECT_EQ(m, "--set model.layers=" + v + ": model.layers takes an int32, not \"" + v +
                     "\" (decimal digits only, a minus sign before a negative number, nothing else)")
        << "[" << v << "] " << m;
  }
  // A float for an integer field, and past int32 (2^31 = 2147483648): the parser's refusal.
  EXPECT_TRUE(starts_with(error_of(kTiny, {"model.layers=1e3"}), "--set model.layers=1e3: model.layers takes an int32"));
  const std::string big = error_of(kTiny, {"model.layers=2147483648"});
  EXPECT_TRUE(starts_with(big, "--set model.layers=2147483648: model.layers takes an int32, not \"2147483648\" "
                               "(Integer out of range (2147483648))"))
      << big;
  // Exact decimal is read as written (tiny-gpt has 4 heads and 4 layers; -0 is 0, refused as not positive).
  EXPECT_EQ(load_scenario(kTiny, {"model.layers=10"}).model.layers, 10);
  EXPECT_TRUE(contains(error_of(kTiny, {"model.layers=-0"}), "model.layers: must be positive, got 0"));

  // In a file: hexadecimal refused at its line and column (`model { layers: ` is 16 characters).
  const std::string tail = " hidden: 64 heads: 4 vocab: 256 seq_len: 32 }\n";
  const std::string file_hex = text_error_of("model { layers: 0x10" + tail);
  EXPECT_TRUE(starts_with(file_hex, "bad.textproto:1:17: the integer 0x10 is hexadecimal")) << file_hex;
  // The parser's refusals name the field before the value.
  EXPECT_TRUE(starts_with(text_error_of("model { layers: +5" + tail), "bad.textproto:1:17: layers: Expected integer, got: +"));
  EXPECT_TRUE(starts_with(text_error_of("model { layers: 1e3" + tail), "bad.textproto:1:17: layers: Expected integer, got: 1e3"));
  const std::string file_big = text_error_of("model {\n  layers: 4294967300" + tail);
  EXPECT_TRUE(starts_with(file_big, "bad.textproto:2:11: layers: Integer out of range (4294967300)")) << file_big;
  EXPECT_TRUE(contains(file_big, "\n    layers: 4294967300 hidden: 64")) << file_big;
}

// A value given by --set that a rule refuses names the --set (it named no line before).
TEST(hostile_input, RefusedSetValueNamesTheSet) {
  const std::string m = error_of(kTiny, {"strategy.dtype=fp7"});
  EXPECT_TRUE(starts_with(m, "--set strategy.dtype=fp7 (over " + kTiny + "): strategy.dtype: ")) << m;
}

TEST(hostile_input, UnterminatedQuotesAreRefused) {
  // --set strategy.dtype='fp16 was read as fp16, --set model.name="abc as the name "abc.
  const std::string dtype = error_of(kTiny, {"strategy.dtype='fp16"});
  EXPECT_TRUE(starts_with(dtype, "--set strategy.dtype='fp16: strategy.dtype: unterminated quote")) << dtype;
  EXPECT_TRUE(contains(error_of(kTiny, {"model.name=\"abc"}), "model.name: unterminated quote"));
  EXPECT_TRUE(contains(error_of(kTiny, {"model.name=\""}), "unterminated quote"));
  EXPECT_EQ(load_scenario(kTiny, {"model.name=\"abc\""}).model.name, "abc");
  // In a file the parser refuses it, at its line.
  EXPECT_TRUE(starts_with(text_error_of(std::string(kModel) + "name: \"abc\n"), "bad.textproto:2:"));
}

// ---------------------------------------------------------------------------------------------
// Rules: interleaved 1F1B on one stage.

TEST(hostile_input, InterleavedNeedsAPipeline) {
  // Accepted by plan, run and export, and an internal error in the simulator.
  const std::string message =
      error_of(kTiny, {"strategy.pp_schedule=interleaved", "strategy.virtual_stages=2"});
  EXPECT_TRUE(starts_with(message, "--set strategy.pp_schedule=interleaved (over " + kTiny +
                                       "): strategy.pp_schedule: interleaved"))
      << message;
  EXPECT_TRUE(contains(message, "needs pp >= 2, got pp = 1")) << message;
  EXPECT_EQ(load_scenario(kTiny, {"strategy.pp_schedule=interleaved", "strategy.virtual_stages=2", "strategy.pp=2",
                                  "cluster.gpus=2"})
                .strategy.pp,
            2);
}

// ---------------------------------------------------------------------------------------------
// Program size: estimated before generating, and capped while generating.

// The estimator's formula (shared/program_size.h) by hand for tiny-gpt (4 layers, 8 sequences in
// micro-batches of 2, so 4 micro-batches, one stage): 4 x (4 x 100 + 80) + (4 + 2) x 40 + 1024.
TEST(hostile_input, ProgramEstimateByHand) {
  EXPECT_EQ(estimate_program_tasks(load_scenario(kTiny)), 4 * (4 * 100 + 80) + 6 * 40 + 1024);
  // Full recompute doubles the per-layer count: 4 x (4 x 200 + 80) + 6 x 40 + 1024.
  EXPECT_EQ(estimate_program_tasks(load_scenario(kTiny, {"strategy.recompute=full"})),
            4 * (4 * 200 + 80) + 6 * 40 + 1024);
  // Two stages: 2 layers each, 4 micro-batches: 4 x (2 x 100 + 80) + 4 x 40 + 1024.
  EXPECT_EQ(estimate_program_tasks(load_scenario(kTiny, {"strategy.pp=2", "cluster.gpus=2"})),
            4 * (2 * 100 + 80) + 4 * 40 + 1024);
  // Ulysses adds 40 a layer, ring attention 16 a ring step: 4 x (4 x (100 + 16 x 4) + 80) + ...
  EXPECT_EQ(estimate_program_tasks(
                load_scenario(kTiny, {"cluster.gpus=2", "strategy.sp=2", "strategy.sp_mode=ulysses"})),
            4 * (4 * 140 + 80) + 6 * 40 + 1024);
  EXPECT_EQ(estimate_program_tasks(
                load_scenario(kTiny, {"cluster.gpus=4", "strategy.sp=4", "strategy.sp_mode=ring_attention"})),
            4 * (4 * 164 + 80) + 6 * 40 + 1024);
}

// The estimate bounds the generated programs from above, and not by much, on every strategy.
TEST(hostile_input, ProgramEstimateIsAnUpperBound) {
  const std::vector<std::vector<std::string>> strategies = {
      {},
      {"model.layers=16", "strategy.global_batch=64"},
      {"cluster.gpus=2", "strategy.tp=2", "model.dropout=0.1"},
      {"cluster.gpus=4", "strategy.tp=4", "strategy.sp_mode=megatron", "strategy.tp_comm_overlap=true",
       "strategy.recompute=full", "model.dropout=0.1"},
      {"cluster.gpus=2", "strategy.zero_stage=3", "strategy.bucket_mb=0.001"},
      {"cluster.gpus=4", "strategy.pp=2", "strategy.tp=2", "strategy.recompute=selective"},
      {"cluster.gpus=2", "strategy.pp=2", "strategy.pp_schedule=interleaved", "strategy.virtual_stages=2",
       "model.tied_embeddings=true"},
      {"cluster.gpus=4", "strategy.sp=4", "strategy.sp_mode=ulysses", "strategy.recompute=full"},
      {"cluster.gpus=8", "strategy.sp=8", "strategy.sp_mode=ring_attention", "model.heads=8", "model.seq_len=64"},
      {"cluster.gpus=4", "strategy.sp=2", "strategy.sp_mode=ring_attention", "strategy.zero_stage=2"},
  };
  for (const auto& sets : strategies) {
    const Scenario sc = load_scenario(kTiny, sets);
    const int64_t estimate = estimate_program_tasks(sc);
    const Schedule schedule(sc);
    for (int rank = 0; rank < schedule.world_size(); ++rank) {
      const int64_t tasks = static_cast<int64_t>(schedule.program(rank).tasks.size());
      SCOPED_TRACE("rank " + std::to_string(rank) + " of " + ::testing::PrintToString(sets));
      EXPECT_GE(estimate, tasks);
      EXPECT_LE(estimate, 4 * tasks + 1024);
    }
  }
}

TEST(hostile_input, TooLargeAProgramIsRefusedBeforeGenerating) {
  // global_batch 10^6 on tiny-gpt: 500,000 micro-batches, std::bad_alloc (exit 134) before.
  const Scenario sc = load_scenario(kTiny, {"strategy.global_batch=1000000"});
  const int64_t tasks = 500000 * (4 * 100 + 80) + 6 * 40 + 1024;
  EXPECT_EQ(estimate_program_tasks(sc), tasks);
  ResourceLimit limit;
  limit.max_memory_bytes = int64_t(8) << 30;
  try {
    check_program_memory(sc, kProgramBytesPerTask, "tandem plan", limit);
    FAIL() << "a program of " << tasks << " tasks was let through";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    const std::string m = e.what();
    // 240,001,264 tasks x 320 bytes = 71.5 GiB.
    EXPECT_TRUE(starts_with(m, "tandem plan needs about 71.5 GiB of memory")) << m;
    EXPECT_TRUE(contains(m, "240001264 tasks per rank program (500000 micro-batches x 4 layers per rank)")) << m;
    EXPECT_TRUE(contains(m, "--max-memory")) << m;
  }
  limit.max_memory_bytes = int64_t(100) << 30;
  EXPECT_NO_THROW(check_program_memory(sc, kProgramBytesPerTask, "tandem plan", limit));
  // With a pipeline the planner replays every stage: 320 + 16 x 64 bytes a task for pp = 16.
  EXPECT_EQ(plan_bytes_per_task(load_scenario(std::string(TANDEM_SOURCE_DIR) + "/scenarios/gpt3-175b-a100.textproto")),
            320 + 16 * 64);
}

TEST(hostile_input, ProgramBuilderRefusesPastItsHardLimit) {
  ProgramBuilder b(3, /*max_tasks=*/10, /*max_buffers=*/4);
  const BufferId x = b.buffer("x", 64, DType::kFp32, BufferRole::kActivation);
  for (int i = 0; i < 5; ++i) {
    b.alloc(x, Stream::kCompute);
    b.free(x, Stream::kCompute);
  }
  try {
    b.alloc(x, Stream::kCompute);
    FAIL() << "the 11th task was added";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput);
    EXPECT_TRUE(starts_with(e.what(), "rank 3: the program passes 10 tasks, the generator's hard limit")) << e.what();
  }
  for (int i = 1; i < 4; ++i) b.buffer("y", 8, DType::kFp32, BufferRole::kActivation);
  EXPECT_THROW(b.buffer("z", 8, DType::kFp32, BufferRole::kActivation), Error);
  // The builder's own limits are far above the largest shipped program (GPT-3: 180,153 tasks).
  EXPECT_GE(kMaxProgramTasks, size_t(180153) * 100);
}

}  // namespace
}  // namespace tandem
