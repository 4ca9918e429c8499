// The plain-value side of a scenario (shared/scenario.cc): element sizes, spellings, parameter
// counts and cluster figures, checked against hand counts and published model sizes.
#include <gtest/gtest.h>

#include "shared/scenario.h"

namespace tandem {
namespace {

TEST(scenario_spec, DtypeBytes) {
  EXPECT_EQ(dtype_bytes(DType::kFp32), 4);
  EXPECT_EQ(dtype_bytes(DType::kFp16), 2);
  EXPECT_EQ(dtype_bytes(DType::kBf16), 2);
  EXPECT_EQ(dtype_bytes(DType::kInt32), 4);
  EXPECT_EQ(dtype_bytes(DType::kUint8), 1);
}

TEST(scenario_spec, ToStringGivesTheUserSpellings) {
  EXPECT_STREQ(to_string(DType::kFp32), "fp32");
  EXPECT_STREQ(to_string(DType::kFp16), "fp16");
  EXPECT_STREQ(to_string(DType::kBf16), "bf16");
  EXPECT_STREQ(to_string(DType::kInt32), "int32");
  EXPECT_STREQ(to_string(DType::kUint8), "uint8");
  EXPECT_STREQ(to_string(Norm::kLayerNorm), "layernorm");
  EXPECT_STREQ(to_string(Norm::kRmsNorm), "rmsnorm");
  EXPECT_STREQ(to_string(Activation::kGelu), "gelu");
  EXPECT_STREQ(to_string(Activation::kSwiglu), "swiglu");
  EXPECT_STREQ(to_string(TpMode::k1d), "1d");
  EXPECT_STREQ(to_string(TpMode::k2d), "2d");
  EXPECT_STREQ(to_string(TpMode::k2p5d), "2.5d");
  EXPECT_STREQ(to_string(TpMode::k3d), "3d");
  EXPECT_STREQ(to_string(PpSchedule::kGpipe), "gpipe");
  EXPECT_STREQ(to_string(PpSchedule::k1f1b), "1f1b");
  EXPECT_STREQ(to_string(PpSchedule::kInterleaved), "interleaved");
  EXPECT_STREQ(to_string(SpMode::kNone), "none");
  EXPECT_STREQ(to_string(SpMode::kMegatron), "megatron");
  EXPECT_STREQ(to_string(SpMode::kRing), "ring");
  EXPECT_STREQ(to_string(SpMode::kUlysses), "ulysses");
  EXPECT_STREQ(to_string(Recompute::kNone), "none");
  EXPECT_STREQ(to_string(Recompute::kSelective), "selective");
  EXPECT_STREQ(to_string(Recompute::kFull), "full");
  EXPECT_STREQ(to_string(Offload::kNone), "none");
  EXPECT_STREQ(to_string(Offload::kOptimizer), "optimizer");
  EXPECT_STREQ(to_string(Offload::kParams), "params");
  EXPECT_STREQ(to_string(Offload::kAuto), "auto");
  EXPECT_STREQ(to_string(Topology::kFatTree), "fat-tree");
  EXPECT_STREQ(to_string(Topology::kRailOptimized), "rail-optimized");
}

ModelSpec gpt(int layers, int hidden, int heads, int vocab) {
  ModelSpec m;
  m.layers = layers;
  m.hidden = hidden;
  m.heads = heads;
  m.kv_heads = heads;
  m.ffn_hidden = 4 * hidden;
  m.vocab = vocab;
  m.seq_len = 2048;
  return m;
}

// tiny-gpt by hand (h 64, l 4, V 256, f 256, layernorm, gelu, tied):
//   per layer: Q,K,V,O 4*64*64 = 16384; fc1+fc2 2*64*256 = 32768;
//              no biases; two layernorms 2*2*64 = 256                          -> 49408
//   4 layers 197632 + embedding 256*64 = 16384 + final layernorm 128          -> 214144
TEST(scenario_spec, ParametersOfATinyGptByHand) {
  ModelSpec m = gpt(4, 64, 4, 256);
  EXPECT_EQ(m.parameters(), 214144);
  m.tied_embeddings = false;  // an output head of its own: + 256*64
  EXPECT_EQ(m.parameters(), 214144 + 16384);
}

// A Llama-style block by hand (h 64, 4 heads of 16, 2 kv heads -> k = 32, f 96, V 100, l 2,
// rmsnorm, swiglu, untied, no biases):
//   per layer: Q,O 2*64*64 = 8192; K,V 2*64*32 = 4096; gate,up,down 3*64*96 = 18432;
//              two rmsnorms 2*64 = 128                                          -> 30848
//   2 layers 61696 + embedding 6400 + head 6400 + final rmsnorm 64              -> 74560
TEST(scenario_spec, ParametersOfAGroupedQuerySwigluModelByHand) {
  ModelSpec m = gpt(2, 64, 4, 100);
  m.kv_heads = 2;
  m.ffn_hidden = 96;
  m.norm = Norm::kRmsNorm;
  m.activation = Activation::kSwiglu;
  m.tied_embeddings = false;
  EXPECT_EQ(m.parameters(), 74560);
  // With layernorm each norm gains a beta: + 2*64 per layer and + 64 for the final one.
  m.norm = Norm::kLayerNorm;
  EXPECT_EQ(m.parameters(), 74560 + 2 * 128 + 64);
}

// GPT-3 175B (Brown et al. 2020, Table 2.1: l 96, h 12288; vocabulary padded to 51200):
// 12*l*h^2 + 4*l*h + V*h + 2h without biases. Narayanan et al. (SC21) give 12*l*h^2*(1 + 13/(12h)
// + (V+s)/(12*l*h)) = 174.6B, which also counts the 9h biases per layer and s*h position
// embeddings that tandem's model lacks.
TEST(scenario_spec, ParametersOfGpt3) {
  const ModelSpec m = gpt(96, 12288, 96, 51200);
  const int64_t l = 96, h = 12288, v = 51200, s = 2048;
  EXPECT_EQ(m.parameters(), 12 * l * h * h + 4 * l * h + v * h + 2 * h);
  EXPECT_EQ(m.parameters(), 174580064256);
  EXPECT_NEAR(static_cast<double>(m.parameters() + 9 * l * h + s * h), 174.6e9, 0.05e9);
  EXPECT_NEAR(static_cast<double>(m.parameters()), 175e9, 0.01 * 175e9);
}

// Llama 2 70B (Touvron et al. 2023; released config: h 8192, l 80, 64 heads, 8 kv heads, f 28672,
// V 32000, untied): 68,976,648,192 parameters, the count the released checkpoint has.
TEST(scenario_spec, ParametersOfLlama2_70b) {
  ModelSpec m = gpt(80, 8192, 64, 32000);
  m.kv_heads = 8;
  m.ffn_hidden = 28672;
  m.norm = Norm::kRmsNorm;
  m.activation = Activation::kSwiglu;
  m.tied_embeddings = false;
  EXPECT_EQ(m.parameters(), 68976648192);
}

TEST(scenario_spec, ClusterPeakAndMemory) {
  ClusterSpec c;
  c.peak_fp16_tflops = 312;
  c.peak_bf16_tflops = 311;
  c.peak_fp32_tflops = 156;
  c.hbm_gib = 80;
  EXPECT_EQ(c.peak_tflops(DType::kFp16), 312);
  EXPECT_EQ(c.peak_tflops(DType::kBf16), 311);
  EXPECT_EQ(c.peak_tflops(DType::kFp32), 156);
  EXPECT_EQ(c.hbm_bytes(), int64_t{80} << 30);
  c.hbm_gib = 141;
  EXPECT_EQ(c.hbm_bytes(), int64_t{141} << 30);
  c.gpus = 1024;
  c.gpus_per_node = 8;
  EXPECT_EQ(c.nodes(), 128);
}

}  // namespace
}  // namespace tandem
