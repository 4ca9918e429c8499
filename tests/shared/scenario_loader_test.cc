// The scenario loader (shared/scenario_loader.cc): the shipped scenarios and presets load with the
// figures their comments cite, and every rule rejects bad input with the file, line, field and rule.
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "shared/error.h"
#include "shared/scenario.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

std::string scenario_path(const std::string& name) {
  return std::string(TANDEM_SOURCE_DIR) + "/scenarios/" + name;
}

// ---------------------------------------------------------------------------------------------
// The shipped scenarios.

TEST(scenario_loader, TinyGpt) {
  const Scenario s = load_scenario(scenario_path("tiny-gpt.textproto"));
  EXPECT_EQ(s.name, "tiny-gpt");
  EXPECT_EQ(s.origin, scenario_path("tiny-gpt.textproto"));
  EXPECT_EQ(s.model.layers, 4);
  EXPECT_EQ(s.model.hidden, 64);
  EXPECT_EQ(s.model.heads, 4);
  EXPECT_EQ(s.model.kv_heads, 4);      // 0 -> heads
  EXPECT_EQ(s.model.ffn_hidden, 256);  // 0 -> 4*hidden
  EXPECT_EQ(s.model.vocab, 256);
  EXPECT_EQ(s.model.seq_len, 32);
  EXPECT_EQ(s.model.norm, Norm::kLayerNorm);
  EXPECT_EQ(s.model.activation, Activation::kGelu);
  EXPECT_EQ(s.model.dropout, 0.0);
  EXPECT_EQ(s.cluster.gpus, 1);
  EXPECT_EQ(s.cluster.preset, "dgx-a100-80g");
  EXPECT_EQ(s.cluster.gpu_name, "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(s.strategy.dp, 1);
  EXPECT_EQ(s.strategy.world_size(), 1);
  EXPECT_EQ(s.strategy.micro_batch, 2);
  EXPECT_EQ(s.strategy.global_batch, 8);
  EXPECT_EQ(s.strategy.micro_batches(), 4);
  EXPECT_EQ(s.strategy.dtype, DType::kFp32);
  EXPECT_EQ(s.seed, 1234u);
}

// Narayanan et al. SC21: GPT-3 175B, batch 1536, micro-batch 1; here t 8 x p 16 on 1024 GPUs.
TEST(scenario_loader, Gpt3OnA100) {
  const Scenario s = load_scenario(scenario_path("gpt3-175b-a100.textproto"));
  EXPECT_EQ(s.model.layers, 96);
  EXPECT_EQ(s.model.hidden, 12288);
  EXPECT_EQ(s.model.heads, 96);
  EXPECT_EQ(s.model.head_dim(), 128);
  EXPECT_EQ(s.model.vocab, 51200);
  EXPECT_EQ(s.model.seq_len, 2048);
  EXPECT_EQ(s.cluster.gpus, 1024);
  EXPECT_EQ(s.cluster.nodes(), 128);
  EXPECT_EQ(s.strategy.tp, 8);
  EXPECT_EQ(s.strategy.pp, 16);
  EXPECT_EQ(s.strategy.dp, 1024 / (8 * 16));
  EXPECT_EQ(s.strategy.micro_batches(), 1536 / (8 * 1));
  EXPECT_EQ(s.strategy.pp_schedule, PpSchedule::k1f1b);
  EXPECT_EQ(s.strategy.dtype, DType::kFp16);
  EXPECT_EQ(s.strategy.recompute, Recompute::kFull);
  EXPECT_NEAR(static_cast<double>(s.model.parameters()), 175e9, 0.01 * 175e9);
  EXPECT_EQ(s.cluster.peak_tflops(s.strategy.dtype), 312);
}

TEST(scenario_loader, Llama2OnH100) {
  const Scenario s = load_scenario(scenario_path("llama2-70b-h100.textproto"));
  EXPECT_EQ(s.model.kv_heads, 8);
  EXPECT_EQ(s.model.ffn_hidden, 28672);
  EXPECT_EQ(s.model.norm, Norm::kRmsNorm);
  EXPECT_EQ(s.model.activation, Activation::kSwiglu);
  EXPECT_FALSE(s.model.tied_embeddings);
  EXPECT_EQ(s.model.parameters(), 68976648192);
  EXPECT_EQ(s.cluster.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.cluster.nodes(), 8);
  EXPECT_EQ(s.strategy.dp, 2);
  EXPECT_EQ(s.strategy.world_size(), 64);
  EXPECT_EQ(s.strategy.micro_batches(), 64 / 2);
  EXPECT_EQ(s.strategy.sp_mode, SpMode::kMegatron);
  EXPECT_EQ(s.strategy.dtype, DType::kBf16);
  EXPECT_TRUE(s.strategy.flash_attention);
  EXPECT_EQ(s.cluster.peak_tflops(s.strategy.dtype), 989.4);
}

TEST(scenario_loader, Opt13bZero3Offload) {
  const Scenario s = load_scenario(scenario_path("opt-13b-zero3-offload.textproto"));
  EXPECT_EQ(s.model.layers, 40);
  EXPECT_EQ(s.model.hidden, 5120);
  EXPECT_EQ(s.model.vocab, 50272);
  // 40*(12h^2 + 4h) + V*h + 2h with h 5120, V 50272: OPT-13B without biases and position embedding.
  EXPECT_EQ(s.model.parameters(), int64_t(40) * (12 * 5120LL * 5120 + 4 * 5120) + 50272LL * 5120 + 2 * 5120);
  EXPECT_EQ(s.strategy.dp, 8);
  EXPECT_EQ(s.strategy.zero_stage, 3);
  EXPECT_EQ(s.strategy.offload, Offload::kOptimizer);
  EXPECT_EQ(s.strategy.dtype, DType::kFp16);
  EXPECT_EQ(s.strategy.micro_batches(), 1);
}

TEST(scenario_loader, EveryShippedScenarioLoads) {
  int count = 0;
  for (const auto& entry : fs::directory_iterator(std::string(TANDEM_SOURCE_DIR) + "/scenarios")) {
    if (entry.path().extension() != ".textproto") continue;
    SCOPED_TRACE(entry.path().string());
    EXPECT_NO_THROW(load_scenario(entry.path().string()));
    ++count;
  }
  EXPECT_GE(count, 4);
}

// Each preset gives every figure; the values are those of the datasheets cited in the files.
TEST(scenario_loader, PresetsAreComplete) {
  struct Expect {
    const char* preset;
    double fp16, tf32, hbm_gib, hbm_gbps, nvlink_gbps, nic_gbps, pcie_gbps;
    CpuVendor cpu;  // DGX A100: 2x AMD EPYC 7742; DGX H100 and H200: 2x Intel Xeon Platinum 8480C
  };
  const Expect expects[] = {
      {"dgx-a100-80g", 312, 156, 80, 2039, 300, 25, 32, CpuVendor::kAmd},
      {"dgx-h100", 989.4, 494.7, 80, 3350, 450, 50, 64, CpuVendor::kIntel},
      {"hgx-h200", 989.4, 494.7, 141, 4800, 450, 50, 64, CpuVendor::kIntel},
  };
  for (const Expect& e : expects) {
    SCOPED_TRACE(e.preset);
    const std::string text = std::string("model { layers: 2 hidden: 64 heads: 4 vocab: 256 seq_len: 32 }\n") +
                             "cluster { preset: \"" + e.preset + "\" gpus: 16 }\nstrategy { global_batch: 16 }\n";
    const ClusterSpec c = parse_scenario(text, "presets.textproto").cluster;
    EXPECT_FALSE(c.gpu_name.empty());
    EXPECT_FALSE(c.source.empty());
    EXPECT_EQ(c.gpus_per_node, 8);
    EXPECT_EQ(c.peak_fp16_tflops, e.fp16);
    EXPECT_EQ(c.peak_bf16_tflops, e.fp16);
    EXPECT_EQ(c.peak_fp32_tflops, e.tf32);
    EXPECT_EQ(c.hbm_gib, e.hbm_gib);
    EXPECT_EQ(c.hbm_bandwidth_gbps, e.hbm_gbps);
    EXPECT_EQ(c.nvlink_bandwidth_gbps, e.nvlink_gbps);
    EXPECT_EQ(c.nics_per_node, 8);
    EXPECT_EQ(c.nic_bandwidth_gbps, e.nic_gbps);
    EXPECT_EQ(c.pcie_bandwidth_gbps, e.pcie_gbps);
    EXPECT_GT(c.nvlink_latency_us, 0);
    EXPECT_GT(c.nic_latency_us, 0);
    EXPECT_GT(c.pcie_latency_us, 0);
    EXPECT_GT(c.kernel_launch_us, 0);
    EXPECT_EQ(c.host_memory_gib, 2048);
    EXPECT_EQ(c.inter_node_topology, Topology::kFatTree);
    EXPECT_EQ(c.oversubscription, 1);
    EXPECT_EQ(c.host_cpu_vendor, e.cpu);
    EXPECT_EQ(c.nodes(), 2);
  }
}

// ---------------------------------------------------------------------------------------------
// A scenario text built field by field, so that each test changes one thing and knows the line
// of every field: set() replaces a field in place or appends it to its block, erase() drops it.

class Doc {
 public:
  Doc() {
    set("model.layers", "4");
    set("model.hidden", "64");
    set("model.heads", "4");
    set("model.vocab", "256");
    set("model.seq_len", "32");
    set("cluster.preset", "\"dgx-a100-80g\"");
    set("cluster.gpus", "8");
    set("strategy.tp", "2");
    set("strategy.pp", "2");
    set("strategy.micro_batch", "1");
    set("strategy.global_batch", "8");
  }

  Doc& set(const std::string& path, const std::string& value) {
    for (auto& entry : entries_) {
      if (entry.first == path) {
        entry.second = value;
        return *this;
      }
    }
    entries_.emplace_back(path, value);
    return *this;
  }

  Doc& erase(const std::string& path) {
    std::erase_if(entries_, [&](const auto& e) { return e.first == path; });
    return *this;
  }

  std::string text() const { return render(nullptr); }

  // The line (from 1) of `path`, or of its block's opening when the field is absent.
  int line(const std::string& path) const {
    int found = 0;
    render(&path, &found);
    return found;
  }

 private:
  std::string render(const std::string* want, int* found = nullptr) const {
    std::string out;
    int line = 0;
    for (const char* block : {"model", "cluster", "strategy"}) {
      bool opened = false;
      for (const auto& [path, value] : entries_) {
        const size_t dot = path.find('.');
        if (path.substr(0, dot) != block) continue;
        if (!opened) {
          out += std::string(block) + " {\n";
          ++line;
          opened = true;
          if (want && *want == block) *found = line;
          if (want && want->substr(0, want->find('.')) == block && *found == 0) *found = line;
        }
        out += "  " + path.substr(dot + 1) + ": " + value + "\n";
        ++line;
        if (want && *want == path) *found = line;
      }
      if (opened) {
        out += "}\n";
        ++line;
      }
    }
    return out;
  }

  std::vector<std::pair<std::string, std::string>> entries_;
};

Scenario parse(const Doc& doc, const std::vector<std::string>& overrides = {}) {
  return parse_scenario(doc.text(), "bad.textproto", overrides);
}

std::string error_of(const Doc& doc, const std::vector<std::string>& overrides = {}) {
  try {
    parse(doc, overrides);
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), 2);
    return e.what();
  }
  ADD_FAILURE() << "no error for:\n" << doc.text();
  return "";
}

// The message names the file and line of `field`, the field, and every word of the rule.
void expect_error(const Doc& doc, const std::string& field, const std::vector<std::string>& words,
                  const std::vector<std::string>& overrides = {}) {
  const std::string message = error_of(doc, overrides);
  SCOPED_TRACE("message: " + message + "\ntext:\n" + doc.text());
  const std::string where = "bad.textproto:" + std::to_string(doc.line(field)) + ": " + field + ": ";
  EXPECT_EQ(message.rfind(where, 0), 0u) << "expected it to start with " << where;
  for (const std::string& word : words) EXPECT_NE(message.find(word), std::string::npos) << word;
}

bool contains(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

TEST(scenario_loader, TheBaseDocIsValid) {
  const Scenario s = parse(Doc());
  EXPECT_EQ(s.strategy.dp, 2);
  EXPECT_EQ(s.strategy.micro_batches(), 4);
  EXPECT_EQ(s.origin, "bad.textproto");
  EXPECT_EQ(s.name, "bad");  // the file's stem when the scenario has no name
}

// ---------------------------------------------------------------------------------------------
// Syntax, unknown fields, wrong types, spellings.

TEST(scenario_loader, SyntaxErrorNamesLineAndColumn) {
  const std::string text = "model {\n  layers: 4\n  hidden 64 64\n}\n";
  try {
    parse_scenario(text, "bad.textproto");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()).rfind("bad.textproto:3:", 0), 0u) << e.what();
    EXPECT_TRUE(contains(e.what(), "hidden 64 64")) << e.what();  // the offending line is shown
  }
}

TEST(scenario_loader, UnknownField) {
  Doc doc;
  doc.set("model.layerz", "4");
  const std::string message = error_of(doc);
  EXPECT_EQ(message.rfind("bad.textproto:" + std::to_string(doc.line("model.layerz")) + ":", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "layerz")) << message;
}

TEST(scenario_loader, WrongType) {
  Doc doc;
  doc.set("model.layers", "4.5");
  const std::string message = error_of(doc);
  EXPECT_EQ(message.rfind("bad.textproto:" + std::to_string(doc.line("model.layers")) + ":", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "integer")) << message;
  EXPECT_TRUE(contains(message, "layers: 4.5")) << message;

  doc.set("model.layers", "\"four\"");
  EXPECT_TRUE(contains(error_of(doc), "bad.textproto:" + std::to_string(doc.line("model.layers")) + ":"));
}

TEST(scenario_loader, FieldGivenTwice) {
  const std::string text = Doc().text() + "strategy { tp: 4 }\n";
  try {
    parse_scenario(text, "bad.textproto");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "bad.textproto:")) << e.what();
    EXPECT_TRUE(contains(e.what(), "strategy")) << e.what();
  }
}

TEST(scenario_loader, BadSpellings) {
  expect_error(Doc().set("model.norm", "\"layer_norm\""), "model.norm",
               {"unknown value \"layer_norm\"", "layernorm, rmsnorm"});
  expect_error(Doc().set("model.activation", "\"relu\""), "model.activation", {"gelu, swiglu"});
  expect_error(Doc().set("strategy.tp_mode", "\"2p5d\""), "strategy.tp_mode", {"1d, 2d, 2.5d, 3d"});
  expect_error(Doc().set("strategy.pp_schedule", "\"pipedream\""), "strategy.pp_schedule",
               {"gpipe, 1f1b, interleaved"});
  expect_error(Doc().set("strategy.sp_mode", "\"deepspeed\""), "strategy.sp_mode",
               {"none, megatron, ring, ulysses"});
  expect_error(Doc().set("strategy.recompute", "\"some\""), "strategy.recompute", {"none, selective, full"});
  expect_error(Doc().set("strategy.offload", "\"nvme\""), "strategy.offload", {"none, optimizer, params, auto"});
  expect_error(Doc().set("strategy.dtype", "\"fp4\""), "strategy.dtype", {"fp32, fp16, bf16, fp8"});
  expect_error(Doc().set("cluster.inter_node_topology", "\"fat_tree\""), "cluster.inter_node_topology",
               {"fat-tree, rail-optimized"});
  expect_error(Doc().set("cluster.host_cpu_vendor", "\"epyc\""), "cluster.host_cpu_vendor",
               {"unknown value \"epyc\"", "intel, amd, arm"});
  // Spellings are matched without regard to case.
  EXPECT_EQ(parse(Doc().set("strategy.pp_schedule", "\"GPipe\"")).strategy.pp_schedule, PpSchedule::kGpipe);
}

// ---------------------------------------------------------------------------------------------
// Model rules.

TEST(scenario_loader, RequiredModelFields) {
  for (const char* field : {"model.layers", "model.hidden", "model.heads", "model.vocab", "model.seq_len"}) {
    SCOPED_TRACE(field);
    Doc doc;
    doc.erase(field);
    expect_error(doc, field, {"required field is missing"});  // blamed on the `model {` line
    EXPECT_EQ(doc.line(field), 1);
    expect_error(Doc().set(field, "0"), field, {"must be positive, got 0"});
    expect_error(Doc().set(field, "-3"), field, {"must be positive, got -3"});
  }
  const std::string message = error_of(Doc().erase("model.layers").erase("model.hidden").erase("model.heads")
                                           .erase("model.vocab").erase("model.seq_len"));
  EXPECT_EQ(message.rfind("bad.textproto: model: required", 0), 0u) << message;
}

TEST(scenario_loader, HiddenDividesIntoHeads) {
  expect_error(Doc().set("model.heads", "6"), "model.heads", {"heads = 6", "must divide model.hidden = 64"});
}

TEST(scenario_loader, KvHeadsDivideHeads) {
  expect_error(Doc().set("model.kv_heads", "3"), "model.kv_heads", {"kv_heads = 3", "must divide model.heads = 4"});
  expect_error(Doc().set("model.kv_heads", "-1"), "model.kv_heads", {">= 0"});
  EXPECT_EQ(parse(Doc().set("model.kv_heads", "2")).model.kv_heads, 2);
}

TEST(scenario_loader, Dropout) {
  expect_error(Doc().set("model.dropout", "1"), "model.dropout", {"[0, 1)", "got 1"});
  expect_error(Doc().set("model.dropout", "-0.1"), "model.dropout", {"[0, 1)"});
  EXPECT_EQ(parse(Doc().set("model.dropout", "0.1")).model.dropout, 0.1);
}

TEST(scenario_loader, FfnDefaultsToFourHiddenForBothActivations) {
  EXPECT_EQ(parse(Doc()).model.ffn_hidden, 256);
  EXPECT_EQ(parse(Doc().set("model.activation", "\"swiglu\"")).model.ffn_hidden, 256);
  EXPECT_EQ(parse(Doc().set("model.ffn_hidden", "172")).model.ffn_hidden, 172);
}

// ---------------------------------------------------------------------------------------------
// Tensor parallelism.

TEST(scenario_loader, TpDividesHeads) {
  expect_error(Doc().set("strategy.tp", "8").set("strategy.pp", "1"), "strategy.tp",
               {"tp = 8", "must divide model.heads = 4", "whole heads"});
}

TEST(scenario_loader, TpDividesKvHeads) {
  expect_error(Doc().set("model.heads", "8").set("model.kv_heads", "2").set("strategy.tp", "4").set("strategy.pp", "1"),
               "strategy.tp", {"tp = 4", "must divide model.kv_heads = 2"});
}

TEST(scenario_loader, TpDividesFfnHidden) {
  expect_error(Doc().set("model.ffn_hidden", "251"), "strategy.tp", {"tp = 2", "must divide model.ffn_hidden = 251"});
}

TEST(scenario_loader, TpDividesVocabWithMegatronsPadding) {
  const Doc doc = Doc().set("model.vocab", "250").set("strategy.tp", "4").set("strategy.pp", "1");
  expect_error(doc, "strategy.tp", {"tp = 4", "must divide model.vocab = 250", "Megatron pads", "128*tp", "512"});
  // The other field is located too.
  EXPECT_TRUE(contains(error_of(doc), "(bad.textproto:" + std::to_string(doc.line("model.vocab")) + ")"));
}

TEST(scenario_loader, TwoDimensionalGrids) {
  const Doc one_node = Doc().set("strategy.pp", "1");
  expect_error(Doc(one_node).set("strategy.tp_mode", "\"2d\"").set("cluster.gpus", "4"), "strategy.tp",
               {"2d", "q*q", "tp = 2", "perfect square"});
  // (micro_batch 2: the q = 2 grid rows split each micro-batch.)
  EXPECT_EQ(parse(Doc(one_node).set("strategy.tp_mode", "\"2d\"").set("strategy.tp", "4").set("strategy.micro_batch", "2"))
                .strategy.tp_mode,
            TpMode::k2d);
  // 2d cuts the heads q ways: q = 4 cannot share out 2 heads.
  expect_error(Doc(one_node).set("strategy.tp_mode", "\"2d\"").set("strategy.tp", "16").set("cluster.gpus", "16")
                   .set("model.heads", "2"),
               "strategy.tp", {"the 2d grid side = 4", "must divide model.heads = 2"});
}

TEST(scenario_loader, TwoAndAHalfDimensionalGrids) {
  const Doc doc = Doc().set("strategy.pp", "1").set("strategy.tp", "8").set("strategy.tp_mode", "\"2.5d\"");
  // 8 = 2 * 2*2; micro_batch 4: the d*q = 4 grid rows split each micro-batch.
  EXPECT_EQ(parse(Doc(doc).set("strategy.tp_depth", "2").set("strategy.micro_batch", "4")).strategy.tp_depth, 2);
  expect_error(Doc(doc).set("strategy.tp_depth", "3"), "strategy.tp", {"2.5d", "tp_depth*q*q", "tp = 8", "tp_depth = 3"});
  expect_error(Doc(doc).set("strategy.tp_depth", "1"), "strategy.tp", {"tp_depth*q*q"});
  expect_error(Doc().set("strategy.tp_depth", "2"), "strategy.tp_depth", {"only used by tp_mode 2.5d"});
  expect_error(Doc().set("strategy.tp_depth", "0"), "strategy.tp_depth", {">= 1"});
}

TEST(scenario_loader, ThreeDimensionalGrids) {
  const Doc doc = Doc().set("strategy.pp", "1").set("strategy.tp_mode", "\"3d\"");
  // 2*2*2; the q*q = 4 batch blocks split each micro-batch (shared/tp3d_groups.h).
  EXPECT_EQ(parse(Doc(doc).set("strategy.tp", "8").set("strategy.micro_batch", "4").set("strategy.global_batch", "8"))
                .strategy.tp,
            8);
  expect_error(Doc(doc).set("strategy.tp", "4").set("cluster.gpus", "4"), "strategy.tp",
               {"3d", "q*q*q", "tp = 4", "perfect cube"});
}

// ---------------------------------------------------------------------------------------------
// The GPU count, the batch, the pipeline.

TEST(scenario_loader, WorldSizeMatchesGpus) {
  expect_error(Doc().set("strategy.dp", "3"), "strategy.dp",
               {"dp*tp*pp*sp = 3*2*2*1 = 12", "must equal cluster.gpus = 8"});
  // With dp derived, the GPUs must split into whole model replicas.
  expect_error(Doc().set("cluster.gpus", "6"), "cluster.gpus", {"gpus = 6", "multiple of tp*pp*sp = 2*2*1 = 4"});
  EXPECT_EQ(parse(Doc().set("strategy.dp", "2")).strategy.dp, 2);
}

TEST(scenario_loader, GlobalBatchSplitsIntoMicroBatches) {
  expect_error(Doc().set("strategy.global_batch", "7"), "strategy.global_batch",
               {"global_batch = 7", "multiple of dp*micro_batch = 2*1 = 2", "derived"});
  expect_error(Doc().set("strategy.micro_batch", "0"), "strategy.micro_batch", {">= 1", "got 0"});
  expect_error(Doc().set("strategy.global_batch", "0"), "strategy.global_batch", {">= 1"});
}

TEST(scenario_loader, LayersSplitOverStages) {
  expect_error(Doc().set("strategy.pp", "3").set("cluster.gpus", "12"), "strategy.pp",
               {"pp*virtual_stages = 3*1 = 3", "must divide model.layers = 4"});
  expect_error(Doc().set("strategy.pp", "2").set("strategy.virtual_stages", "4").set("strategy.pp_schedule", "\"interleaved\""),
               "strategy.pp", {"pp*virtual_stages = 2*4 = 8", "model.layers = 4"});
}

TEST(scenario_loader, InterleavedSchedule) {
  expect_error(Doc().set("strategy.pp_schedule", "\"interleaved\""), "strategy.pp_schedule",
               {"interleaved needs virtual_stages >= 2", "got 1"});
  const Doc interleaved = Doc().set("strategy.pp_schedule", "\"interleaved\"").set("strategy.virtual_stages", "2");
  EXPECT_EQ(parse(interleaved).strategy.virtual_stages, 2);
  expect_error(Doc(interleaved).set("strategy.global_batch", "6"), "strategy.pp_schedule",
               {"micro-batches", "6/2 = 3", "multiple of pp = 2"});
  expect_error(Doc().set("strategy.virtual_stages", "2"), "strategy.virtual_stages",
               {"virtual_stages = 2", "needs pp_schedule interleaved, not 1f1b"});
}

// ---------------------------------------------------------------------------------------------
// Sequence parallelism, ZeRO.

TEST(scenario_loader, SequenceParallelModes) {
  const Doc sp2 = Doc().set("strategy.pp", "1").set("strategy.sp", "2");  // tp 2 * sp 2 * dp 2
  expect_error(sp2, "strategy.sp", {"sp = 2", "needs sp_mode ring, ulysses or ring_attention, not none"});
  expect_error(Doc(sp2).set("strategy.sp_mode", "\"megatron\""), "strategy.sp", {"over the tp group"});
  EXPECT_EQ(parse(Doc(sp2).set("strategy.sp_mode", "\"ring\"").set("strategy.tp", "1")).strategy.dp, 4);
  expect_error(Doc().set("strategy.sp_mode", "\"ring\""), "strategy.sp_mode", {"ring needs sp > 1", "sp = 1"});
  expect_error(Doc().set("strategy.sp_mode", "\"ulysses\""), "strategy.sp_mode", {"ulysses needs sp > 1"});
}

TEST(scenario_loader, UlyssesScattersHeads) {
  const Doc doc = Doc().set("strategy.pp", "1").set("strategy.sp", "4").set("strategy.sp_mode", "\"ulysses\"");
  expect_error(doc, "strategy.sp", {"ulysses", "tp*sp = 2*4 = 8", "to divide", "model.heads = 4"});
  EXPECT_EQ(parse(Doc(doc).set("model.heads", "8")).strategy.sp, 4);
}

// shared/sequence_rules.cc: Ulysses scatters the kv heads as well (Llama-style grouped-query
// attention with 2 kv heads cannot run on sp 4); ring attention's zig-zag split needs 2*sp chunks.
TEST(scenario_loader, SequenceAxisRules) {
  const Doc uly = Doc().set("strategy.pp", "1").set("strategy.sp", "2").set("strategy.sp_mode", "\"ulysses\"")
                      .set("strategy.tp", "1").set("cluster.gpus", "4");
  EXPECT_EQ(parse(uly).strategy.dp, 2);
  expect_error(Doc(uly).set("model.heads", "8").set("model.kv_heads", "1"), "strategy.sp",
               {"tp*sp = 1*2 = 2", "kv heads, model.kv_heads = 1"});
  const Doc ring = Doc(uly).set("strategy.sp_mode", "\"ring_attention\"");
  EXPECT_EQ(parse(ring).strategy.sp_mode, SpMode::kRingAttention);
  expect_error(Doc(ring).set("model.seq_len", "34"), "strategy.sp",
               {"ring_attention needs 2*sp = 4", "model.seq_len = 34", "chunks i and 2*sp-1-i"});
  expect_error(Doc(ring).set("model.dropout", "0.1"), "strategy.sp_mode", {"ring_attention", "model.dropout"});
  expect_error(Doc(ring).set("strategy.tp_mode", "\"2d\"").set("strategy.tp", "4").set("cluster.gpus", "8"),
               "strategy.sp_mode", {"tp_mode 1d only", "not 2d"});
}

// shared/sequence_rules.cc check_ring_self_rules: what Colossal-AI's ring self-attention (sp_mode
// ring) is not generated with, each refused naming the field and the rule.
TEST(scenario_loader, RingSelfAttentionRules) {
  const Doc ring = Doc().set("strategy.pp", "1").set("strategy.sp", "2").set("strategy.sp_mode", "\"ring\"")
                       .set("strategy.tp", "1").set("cluster.gpus", "4");
  EXPECT_EQ(parse(ring).strategy.sp_mode, SpMode::kRing);
  expect_error(Doc(ring).set("strategy.tp", "2"), "strategy.tp", {"sp_mode ring", "runs with tp 1, not 2"});
  expect_error(Doc(ring).set("model.kv_heads", "2"), "model.kv_heads",
               {"multi-head", "model.kv_heads = 2", "model.heads = 4"});
  expect_error(Doc(ring).set("model.dropout", "0.1"), "strategy.sp_mode", {"without attention dropout"});
  expect_error(Doc(ring).set("strategy.flash_attention", "true"), "strategy.flash_attention",
               {"materializes the scores"});
  expect_error(Doc(ring).set("strategy.recompute", "\"selective\""), "strategy.recompute", {"not selective"});
}

TEST(scenario_loader, SequenceSplitsOverSp) {
  expect_error(Doc().set("strategy.pp", "1").set("strategy.sp", "4").set("strategy.sp_mode", "\"ring\"")
                   .set("model.seq_len", "30").set("cluster.gpus", "8").set("strategy.tp", "2"),
               "strategy.sp", {"sp = 4", "must divide model.seq_len = 30"});
}

TEST(scenario_loader, MegatronSequenceParallelism) {
  const Doc doc = Doc().set("strategy.sp_mode", "\"megatron\"").set("strategy.tp", "4").set("strategy.pp", "2");
  EXPECT_EQ(parse(doc).strategy.sp_mode, SpMode::kMegatron);
  expect_error(Doc(doc).set("model.seq_len", "30"), "strategy.sp_mode",
               {"megatron", "tp = 4", "to divide model.seq_len = 30"});
  expect_error(Doc(doc).set("strategy.tp_mode", "\"2d\"").set("strategy.pp", "1").set("cluster.gpus", "4"),
               "strategy.sp_mode", {"tp_mode 1d only", "not 2d"});
}

TEST(scenario_loader, TpCommOverlapNeedsMegatronSpAndTensorParallelism) {
  // The base doc has tp 2, pp 2 on 8 GPUs. The overlap turns Megatron-SP's all-gathers and
  // reduce-scatters into ring exchanges, so it needs both: sp_mode megatron and tp > 1.
  const Doc on = Doc().set("strategy.tp_comm_overlap", "true");
  // sp_mode none (the default): rejected, blamed on the overlap's line.
  expect_error(on, "strategy.tp_comm_overlap", {"tp_comm_overlap", "sp_mode megatron and tp > 1", "sp_mode none"});
  // sp_mode ulysses with sp 2 (tp 2 x sp 2 x dp 2): a valid grid, still not Megatron-SP.
  expect_error(Doc(on).set("strategy.pp", "1").set("strategy.sp", "2").set("strategy.sp_mode", "\"ulysses\""),
               "strategy.tp_comm_overlap", {"sp_mode megatron and tp > 1", "sp_mode ulysses"});
  // Megatron-SP with tp 1 (pp 2 x dp 4): nothing to exchange.
  const Doc megatron = Doc(on).set("strategy.sp_mode", "\"megatron\"");
  expect_error(Doc(megatron).set("strategy.tp", "1"), "strategy.tp_comm_overlap",
               {"sp_mode megatron and tp > 1", "tp = 1"});
  // From the command line too: the message starts with the --set that turned it on.
  const std::string message = error_of(Doc(), {"strategy.tp_comm_overlap=true"});
  EXPECT_EQ(message.rfind("--set strategy.tp_comm_overlap=true (over bad.textproto): strategy.tp_comm_overlap: ", 0),
            0u)
      << message;
  // Megatron-SP with tp 2: accepted; off by default.
  EXPECT_TRUE(parse(megatron).software.tp_comm_overlap);
  EXPECT_FALSE(parse(Doc().set("strategy.sp_mode", "\"megatron\"")).software.tp_comm_overlap);
}

TEST(scenario_loader, ZeroStage) {
  expect_error(Doc().set("strategy.zero_stage", "4"), "strategy.zero_stage", {"0, 1, 2 or 3", "got 4"});
  expect_error(Doc().set("strategy.zero_stage", "-1"), "strategy.zero_stage", {"0, 1, 2 or 3"});
  EXPECT_EQ(parse(Doc().set("strategy.zero_stage", "3")).strategy.zero_stage, 3);
}

TEST(scenario_loader, OtherStrategyBounds) {
  expect_error(Doc().set("strategy.tp", "0"), "strategy.tp", {">= 1", "got 0"});
  expect_error(Doc().set("strategy.pp", "0"), "strategy.pp", {">= 1"});
  expect_error(Doc().set("strategy.sp", "0"), "strategy.sp", {">= 1"});
  expect_error(Doc().set("strategy.dp", "-2"), "strategy.dp", {">= 0"});
  expect_error(Doc().set("strategy.virtual_stages", "0"), "strategy.virtual_stages", {">= 1"});
  expect_error(Doc().set("strategy.bucket_mb", "0"), "strategy.bucket_mb", {"positive"});
}

// ---------------------------------------------------------------------------------------------
// Cluster figures and presets.

TEST(scenario_loader, ClusterFiguresMustBePositive) {
  for (const char* field : {"cluster.peak_fp16_tflops", "cluster.peak_bf16_tflops", "cluster.peak_fp32_tflops",
                            "cluster.hbm_gib", "cluster.hbm_bandwidth_gbps", "cluster.nvlink_bandwidth_gbps",
                            "cluster.nic_bandwidth_gbps", "cluster.pcie_bandwidth_gbps"}) {
    SCOPED_TRACE(field);
    expect_error(Doc().set("cluster.gpus", "16").set(field, "-1"), field, {"must be positive, got -1"});
  }
  expect_error(Doc().set("cluster.gpus", "0"), "cluster.gpus", {"must be positive, got 0"});
  expect_error(Doc().erase("cluster.gpus"), "cluster.gpus", {"required field is missing"});
  expect_error(Doc().set("cluster.gpus_per_node", "0"), "cluster.gpus_per_node", {"must be positive"});
  expect_error(Doc().set("cluster.oversubscription", "0.5"), "cluster.oversubscription", {">= 1", "0.5"});
  expect_error(Doc().set("cluster.nic_latency_us", "-1"), "cluster.nic_latency_us", {">= 0"});
  expect_error(Doc().set("cluster.nics_per_node", "0").set("cluster.gpus", "16"), "cluster.nics_per_node",
               {">= 1", "got 0"});
  // One node needs no network.
  EXPECT_EQ(parse(Doc().set("cluster.nics_per_node", "0")).cluster.nics_per_node, 0);
}

// The host side of offload (docs/offload.md, "PCIe and host memory"): 0 = not modelled, never
// negative.
TEST(scenario_loader, HostFiguresOfOffload) {
  for (const char* field : {"cluster.pcie_switch_uplink_gbps", "cluster.host_memory_bandwidth_gbps",
                            "cluster.host_core_ghz", "cluster.gpus_per_pcie_switch", "cluster.host_cores",
                            "cluster.host_simd_fp32_lanes"}) {
    SCOPED_TRACE(field);
    expect_error(Doc().set(field, "-1"), field, {">= 0"});
  }
  // A switch wider than the node (the preset's 2 GPUs per switch, gpus_per_node set to 1) is
  // accepted: the node's GPUs all sit on one switch.
  EXPECT_EQ(parse(Doc().set("cluster.gpus_per_node", "1").set("cluster.gpus", "8").set("cluster.nics_per_node", "1"))
                .cluster.gpus_per_pcie_switch,
            2);
  const Scenario s = parse(Doc().set("cluster.gpus_per_pcie_switch", "2").set("cluster.host_memory_bandwidth_gbps", "409.6"));
  EXPECT_EQ(s.cluster.gpus_per_pcie_switch, 2);
  EXPECT_DOUBLE_EQ(s.cluster.host_memory_bandwidth_gbps, 409.6);
}

TEST(scenario_loader, ClusterWithoutPresetMustGiveItsFigures) {
  Doc doc;
  doc.erase("cluster.preset");
  const std::string message = error_of(doc);
  EXPECT_EQ(message.rfind("bad.textproto:" + std::to_string(doc.line("cluster.gpus") - 1) + ": cluster.gpus_per_node:", 0), 0u)
      << message;
  doc.set("cluster.gpus_per_node", "8");
  expect_error(doc, "cluster.peak_fp16_tflops", {"must be positive, got 0", "not set", "preset"});
}

TEST(scenario_loader, PresetMergeAndOverride) {
  const Scenario s = parse(Doc().set("cluster.preset", "\"dgx-h100\"").set("cluster.hbm_gib", "94"));
  EXPECT_EQ(s.cluster.preset, "dgx-h100");
  EXPECT_EQ(s.cluster.hbm_gib, 94);                 // the scenario's own value wins
  EXPECT_EQ(s.cluster.nvlink_bandwidth_gbps, 450);  // the rest comes from the preset
  EXPECT_EQ(s.cluster.gpu_name, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(s.cluster.gpus, 8);
}

TEST(scenario_loader, UnknownPresetListsTheKnownOnes) {
  expect_error(Doc().set("cluster.preset", "\"dgx-b200\""), "cluster.preset",
               {"unknown preset \"dgx-b200\"", "dgx-a100-80g, dgx-h100, hgx-h200"});
}

class TempDir {
 public:
  TempDir() : path_(fs::temp_directory_path() / ("tandem-scenario-test-" + std::to_string(::getpid()))) {
    fs::create_directories(path_);
  }
  ~TempDir() { fs::remove_all(path_); }
  std::string write(const std::string& name, const std::string& text) const {
    std::ofstream(path_ / name) << text;
    return (path_ / name).string();
  }

 private:
  fs::path path_;
};

TEST(scenario_loader, PresetFromAFile) {
  TempDir dir;
  const std::string preset = dir.write("mine.textproto",
                                       "gpu_name: \"X\"\ngpus_per_node: 4\npeak_fp16_tflops: 100\n"
                                       "peak_bf16_tflops: 100\npeak_fp32_tflops: 50\nhbm_gib: 40\n"
                                       "hbm_bandwidth_gbps: 1000\nnvlink_bandwidth_gbps: 100\n"
                                       "pcie_bandwidth_gbps: 16\nnics_per_node: 1\nnic_bandwidth_gbps: 12.5\n");
  const Scenario s = parse(Doc().set("cluster.preset", "\"" + preset + "\""));
  EXPECT_EQ(s.cluster.gpu_name, "X");
  EXPECT_EQ(s.cluster.gpus_per_node, 4);
  EXPECT_EQ(s.cluster.nodes(), 2);

  // A relative path is found beside the scenario file.
  Doc doc = Doc().set("cluster.preset", "\"./mine.textproto\"");
  const std::string scenario = dir.write("s.textproto", doc.text());
  EXPECT_EQ(load_scenario(scenario).cluster.gpu_name, "X");

  // A bad figure in the preset is blamed on the preset's line.
  const std::string broken = dir.write("broken.textproto", "gpus_per_node: 8\npeak_fp16_tflops: -5\n");
  const std::string message = error_of(Doc().set("cluster.preset", "\"" + broken + "\""));
  EXPECT_EQ(message.rfind(broken + ":2 (preset of bad.textproto): cluster.peak_fp16_tflops: must be positive", 0), 0u) << message;

  const std::string unparsable = dir.write("unparsable.textproto", "gpus_per_node: 8\nlayers: 4\n");
  const std::string message2 = error_of(Doc().set("cluster.preset", "\"" + unparsable + "\""));
  EXPECT_EQ(message2.rfind(unparsable + ":2:", 0), 0u) << message2;
  EXPECT_TRUE(contains(message2, "(in the preset named by bad.textproto:")) << message2;
  EXPECT_TRUE(contains(message2, "layers")) << message2;

  const Doc missing = Doc().set("cluster.preset", "\"/nonexistent/x.textproto\"");
  expect_error(missing, "cluster.preset", {"cannot read preset file"});
}

TEST(scenario_loader, MissingFile) {
  try {
    load_scenario("/nonexistent/scenario.textproto");
    FAIL();
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "/nonexistent/scenario.textproto")) << e.what();
    EXPECT_EQ(e.exit_code(), 2);
  }
}

// ---------------------------------------------------------------------------------------------
// --set overrides.

TEST(scenario_loader, SetOverridesAndRederivesDp) {
  const Scenario s = parse(Doc(), {"strategy.tp=4"});
  EXPECT_EQ(s.strategy.tp, 4);
  EXPECT_EQ(s.strategy.dp, 1);  // 8 / (4*2)
  EXPECT_EQ(s.strategy.micro_batches(), 8);
}

TEST(scenario_loader, SetAppliesInOrderAndTakesEveryType) {
  const Scenario s = parse(Doc(), {"strategy.tp=4", "strategy.tp=1", "strategy.pp_schedule=gpipe",
                                   "strategy.recompute=\"full\"", "model.dropout=0.25",
                                   "strategy.flash_attention=true", "seed=7", "name=renamed",
                                   "cluster.hbm_gib=40"});
  EXPECT_EQ(s.strategy.tp, 1);
  EXPECT_EQ(s.strategy.dp, 4);
  EXPECT_EQ(s.strategy.pp_schedule, PpSchedule::kGpipe);
  EXPECT_EQ(s.strategy.recompute, Recompute::kFull);
  EXPECT_EQ(s.model.dropout, 0.25);
  EXPECT_TRUE(s.strategy.flash_attention);
  EXPECT_EQ(s.seed, 7u);
  EXPECT_EQ(s.name, "renamed");
  EXPECT_EQ(s.cluster.hbm_gib, 40);  // --set overrides the preset like the file does
}

TEST(scenario_loader, SetSwitchesPresetAndFillsMissingFields) {
  const Scenario s = parse(Doc().erase("model.hidden"), {"model.hidden=128", "cluster.preset=hgx-h200"});
  EXPECT_EQ(s.model.hidden, 128);
  EXPECT_EQ(s.cluster.hbm_gib, 141);
}

TEST(scenario_loader, SetUnknownPath) {
  const std::string message = error_of(Doc(), {"strategy.tpp=4"});
  EXPECT_EQ(message.rfind("--set strategy.tpp=4: ", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "unknown field \"tpp\" in strategy")) << message;
  EXPECT_TRUE(contains(message, "tp, pp, sp")) << message;

  EXPECT_EQ(error_of(Doc(), {"strategi.tp=4"}).rfind("--set strategi.tp=4: unknown field \"strategi\"", 0), 0u);
  EXPECT_EQ(error_of(Doc(), {"strategy.tp.x=4"}).rfind("--set strategy.tp.x=4: strategy.tp is an int32", 0), 0u);
  EXPECT_EQ(error_of(Doc(), {"strategy=4"}).rfind("--set strategy=4: strategy is a group of fields", 0), 0u);
  EXPECT_EQ(error_of(Doc(), {"strategy.tp"}).rfind("--set strategy.tp: expected part.field=value", 0), 0u);
}

TEST(scenario_loader, SetWrongType) {
  const std::string message = error_of(Doc(), {"strategy.tp=abc"});
  EXPECT_EQ(message.rfind("--set strategy.tp=abc: ", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "strategy.tp takes an int32, not \"abc\"")) << message;
  EXPECT_EQ(error_of(Doc(), {"strategy.tp=4.5"}).rfind("--set strategy.tp=4.5: ", 0), 0u);
  EXPECT_EQ(error_of(Doc(), {"strategy.tp=99999999999"}).rfind("--set strategy.tp=99999999999: ", 0), 0u);
  EXPECT_EQ(error_of(Doc(), {"strategy.flash_attention=maybe"}).rfind("--set strategy.flash_attention=maybe: ", 0), 0u);
  EXPECT_EQ(error_of(Doc(), {"model.dropout=x"}).rfind("--set model.dropout=x: ", 0), 0u);
}

TEST(scenario_loader, ARuleBrokenBySetIsBlamedOnTheSet) {
  const std::string message = error_of(Doc(), {"strategy.tp=3", "cluster.gpus=12"});
  EXPECT_EQ(message.rfind("--set strategy.tp=3 (over bad.textproto): strategy.tp: ", 0), 0u) << message;
  EXPECT_TRUE(contains(message, "tp = 3 must divide model.heads = 4")) << message;

  const std::string spelling = error_of(Doc(), {"strategy.dtype=fp4"});
  EXPECT_EQ(spelling.rfind("--set strategy.dtype=fp4 (over bad.textproto): strategy.dtype: unknown value", 0), 0u)
      << spelling;
  EXPECT_EQ(error_of(Doc(), {"cluster.preset=nope"}).rfind("--set cluster.preset=nope (over bad.textproto): cluster.preset: unknown preset", 0), 0u);
}

TEST(scenario_loader, CollectiveAlgorithmIsChecked) {
  const std::string path = std::string(TANDEM_SOURCE_DIR) + "/scenarios/tiny-gpt.textproto";
  EXPECT_EQ(load_scenario(path).strategy.collective_algorithm, CollectiveAlgorithm::kAuto);
  EXPECT_EQ(load_scenario(path, {"strategy.collective_algorithm=tree"}).strategy.collective_algorithm,
            CollectiveAlgorithm::kTree);
  try {
    load_scenario(path, {"strategy.collective_algorithm=butterfly"});
    FAIL() << "an unknown algorithm was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("strategy.collective_algorithm"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("ring"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace tandem
