// model { hf_config: ... } (shared/hf_config.h): a Hugging Face config.json of each family fills
// the model part, and what tandem cannot model is refused by file and field. The config files are
// in tests/shared/hf_configs/, restated from the published ones (its README.md cites each URL:
// huggingface.co/<org>/<model>/blob/main/config.json); every expected number below is read by
// hand from those files.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "shared/error.h"
#include "shared/scenario.h"

namespace tandem {
namespace {

namespace fs = std::filesystem;

const std::string kDir = TANDEM_SOURCE_DIR "/tests/shared/hf_configs";

// A scenario text beside the configs (its origin is in kDir, so relative paths resolve there).
Scenario load(const std::string& model_block, const std::vector<std::string>& sets = {}) {
  const std::string text = "name: \"hf\"\nmodel {\n" + model_block +
                           "\n}\ncluster { preset: \"dgx-h100\" gpus: 1 }\n"
                           "strategy { micro_batch: 1 global_batch: 1 dtype: \"bf16\" }\n";
  return parse_scenario(text, kDir + "/scenario.textproto", sets);
}

// The message of the Error `f` throws; fails the test when it throws none or another kind.
template <class F>
std::string refusal(F f) {
  try {
    f();
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kBadInput) << e.what();
    return e.what();
  }
  ADD_FAILURE() << "no error";
  return "";
}

struct Expected {
  const char* folder;
  const char* name;
  int layers, hidden, heads, kv_heads, ffn, vocab, seq_len;
  Norm norm;
  Activation activation;
  bool tied;
};

// By hand from each config.json (field names of shared/hf_config.h).
TEST(HfConfig, EachFamilyFillsTheModel) {
  const Expected all[] = {
      // gpt2: n_layer 12, n_embd 768, n_head 12, no n_inner (4 x 768), vocab_size 50257,
      // n_positions 1024, gelu_new, no tie_word_embeddings (GPT-2 ties).
      {"gpt2", "gpt2", 12, 768, 12, 12, 3072, 50257, 1024, Norm::kLayerNorm, Activation::kGelu, true},
      // pythia-70m (gpt_neox): 6 layers, 512 hidden, 8 heads, intermediate 2048, vocab 50304,
      // 2048 positions, gelu, tie_word_embeddings false.
      {"pythia-70m", "gpt_neox", 6, 512, 8, 8, 2048, 50304, 2048, Norm::kLayerNorm, Activation::kGelu, false},
      // opt-125m: 12 layers, 768 hidden, 12 heads, ffn_dim 3072, vocab 50272, 2048 positions, relu
      // (costed as tandem's gelu kernel), tied by default; named by _name_or_path.
      {"opt-125m", "facebook/opt-125m", 12, 768, 12, 12, 3072, 50272, 2048, Norm::kLayerNorm, Activation::kGelu, true},
      // Llama 2 7B: 32 layers, 4096 hidden, 32 heads and 32 kv heads, intermediate 11008, vocab
      // 32000, 4096 positions, silu (swiglu), rmsnorm, untied.
      {"llama-2-7b", "llama", 32, 4096, 32, 32, 11008, 32000, 4096, Norm::kRmsNorm, Activation::kSwiglu, false},
      // Llama 3 8B: 8 kv heads (grouped-query), intermediate 14336, vocab 128256, 8192 positions.
      {"llama-3-8b", "llama", 32, 4096, 32, 8, 14336, 128256, 8192, Norm::kRmsNorm, Activation::kSwiglu, false},
  };
  for (const Expected& x : all) {
    SCOPED_TRACE(x.folder);
    const Scenario s = load(std::string("hf_config: \"") + x.folder + "/config.json\"");
    EXPECT_EQ(s.model.name, x.name);
    EXPECT_EQ(s.model.layers, x.layers);
    EXPECT_EQ(s.model.hidden, x.hidden);
    EXPECT_EQ(s.model.heads, x.heads);
    EXPECT_EQ(s.model.kv_heads, x.kv_heads);
    EXPECT_EQ(s.model.ffn_hidden, x.ffn);
    EXPECT_EQ(s.model.vocab, x.vocab);
    EXPECT_EQ(s.model.seq_len, x.seq_len);
    EXPECT_EQ(s.model.norm, x.norm);
    EXPECT_EQ(s.model.activation, x.activation);
    EXPECT_EQ(s.model.tied_embeddings, x.tied);
  }
}

// The parameters of Llama 2 7B and Llama 3 8B from their configs, by hand, equal the counts
// published for the checkpoints (6,738,415,616 and 8,030,261,248): embedding and untied head
// 2 x vocab x hidden; per layer q and o hidden^2 each, k and v hidden x kv_heads x head_dim each,
// the gated MLP 3 x hidden x ffn, two RMSNorm weights of hidden; the final norm, hidden.
TEST(HfConfig, LlamaParametersMatchThePublishedCounts) {
  const int64_t h = 4096;
  const int64_t llama2 = 2 * 32000 * h + 32 * (4 * h * h + 3 * h * 11008 + 2 * h) + h;
  EXPECT_EQ(llama2, 6738415616);
  EXPECT_EQ(load("hf_config: \"llama-2-7b/config.json\"").model.parameters(), llama2);
  const int64_t kv = 8 * 128;
  const int64_t llama3 = 2 * 128256 * h + 32 * (2 * h * h + 2 * h * kv + 3 * h * 14336 + 2 * h) + h;
  EXPECT_EQ(llama3, 8030261248);
  EXPECT_EQ(load("hf_config: \"llama-3-8b/config.json\"").model.parameters(), llama3);
}

// Mistral 7B v0.1 attends within a 4096-token window: a sequence of at most 4096 tokens is full
// causal attention, which tandem models. Qwen2 0.5B lists sliding_window 131072 but
// use_sliding_window false, so its window does not apply; it ties its embeddings.
TEST(HfConfig, MistralWithinItsWindowAndQwen2) {
  const Scenario m = load("hf_config: \"mistral-7b-v0.1/config.json\"\nseq_len: 4096");
  EXPECT_EQ(m.model.layers, 32);
  EXPECT_EQ(m.model.kv_heads, 8);
  EXPECT_EQ(m.model.ffn_hidden, 14336);
  EXPECT_EQ(m.model.vocab, 32000);
  EXPECT_EQ(m.model.seq_len, 4096);
  EXPECT_EQ(m.model.activation, Activation::kSwiglu);
  EXPECT_FALSE(m.model.tied_embeddings);

  // 24 layers, 896 hidden, 14 heads, 2 kv heads, intermediate 4864, vocab 151936.
  const Scenario q = load("hf_config: \"qwen2-0.5b/config.json\"\nseq_len: 2048");
  EXPECT_EQ(q.model.layers, 24);
  EXPECT_EQ(q.model.hidden, 896);
  EXPECT_EQ(q.model.heads, 14);
  EXPECT_EQ(q.model.kv_heads, 2);
  EXPECT_EQ(q.model.ffn_hidden, 4864);
  EXPECT_EQ(q.model.vocab, 151936);
  EXPECT_EQ(q.model.seq_len, 2048);
  EXPECT_EQ(q.model.norm, Norm::kRmsNorm);
  EXPECT_TRUE(q.model.tied_embeddings);
}

// In the file, hf_config is like a preset: the block's own fields and --set fields override it.
TEST(HfConfig, FieldsBesideItAndSetOverrideIt) {
  const Scenario s = load("hf_config: \"llama-2-7b/config.json\"\nlayers: 2\nname: \"small llama\"",
                          {"model.hidden=1024", "model.heads=8", "model.kv_heads=8"});
  EXPECT_EQ(s.model.layers, 2);
  EXPECT_EQ(s.model.name, "small llama");
  EXPECT_EQ(s.model.hidden, 1024);
  EXPECT_EQ(s.model.heads, 8);
  EXPECT_EQ(s.model.ffn_hidden, 11008);  // still the config's
}

// Given with --set, it replaces the model the scenario file describes (the tiny GPT: 4 layers of
// 64, layernorm, gelu, tied) with Llama 2 7B's; the file's seq_len (32) stays; --set fields win.
TEST(HfConfig, SetReplacesTheFilesModel) {
  const std::string tiny = TANDEM_SOURCE_DIR "/scenarios/tiny-gpt.textproto";
  const Scenario s = load_scenario(tiny, {"model.hf_config=" + kDir + "/llama-2-7b/config.json", "model.layers=2"});
  EXPECT_EQ(s.model.name, "llama");
  EXPECT_EQ(s.model.layers, 2);
  EXPECT_EQ(s.model.hidden, 4096);
  EXPECT_EQ(s.model.heads, 32);
  EXPECT_EQ(s.model.ffn_hidden, 11008);
  EXPECT_EQ(s.model.vocab, 32000);
  EXPECT_EQ(s.model.seq_len, 32);
  EXPECT_EQ(s.model.norm, Norm::kRmsNorm);
  EXPECT_EQ(s.model.activation, Activation::kSwiglu);
  EXPECT_FALSE(s.model.tied_embeddings);

  // GPT-2 over a scenario with grouped-query attention: kv_heads goes back to the heads.
  const Scenario g = load("hf_config: \"llama-3-8b/config.json\"", {"model.hf_config=" + kDir + "/gpt2/config.json"});
  EXPECT_EQ(g.model.heads, 12);
  EXPECT_EQ(g.model.kv_heads, 12);
  EXPECT_EQ(g.model.ffn_hidden, 3072);
}

// A relative path in the file is taken from the file's folder; with --set, from the working
// directory, else the scenario file's folder.
TEST(HfConfig, RelativePaths) {
  char tmpl[] = "/tmp/tandem-hf-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  const fs::path dir(tmpl);
  fs::create_directories(dir / "sub" / "cfg");
  fs::copy_file(kDir + "/gpt2/config.json", dir / "sub" / "cfg" / "config.json");
  fs::copy_file(kDir + "/pythia-70m/config.json", dir / "config.json");
  {
    std::ofstream out(dir / "sub" / "s.textproto");
    out << "model { hf_config: \"cfg/config.json\" }\ncluster { preset: \"dgx-h100\" gpus: 1 }\n"
           "strategy { micro_batch: 1 global_batch: 1 }\n";
  }
  const fs::path before = fs::current_path();
  fs::current_path(dir);  // cfg/config.json is not here: only beside the scenario
  EXPECT_EQ(load_scenario("sub/s.textproto").model.hidden, 768);                              // gpt2, beside the file
  EXPECT_EQ(load_scenario("sub/s.textproto", {"model.hf_config=config.json"}).model.hidden, 512);  // pythia, here
  EXPECT_EQ(load_scenario("sub/s.textproto", {"model.hf_config=cfg/config.json"}).model.hidden, 768);  // beside
  fs::current_path(before);
  fs::remove_all(dir);
}

// Refusals: bad input, naming the config file, its field and the rule, and where hf_config was
// named.
TEST(HfConfig, WhatTandemCannotModelIsRefusedByField) {
  std::string e = refusal([] { load("hf_config: \"mixtral-8x7b/config.json\""); });
  EXPECT_NE(e.find("mixtral-8x7b/config.json: num_local_experts: 8 experts"), std::string::npos) << e;
  EXPECT_NE(e.find("hf_config named by " + kDir + "/scenario.textproto:3"), std::string::npos) << e;

  // Mistral at its 32768 positions: the 4096-token window would apply.
  e = refusal([] { load("hf_config: \"mistral-7b-v0.1/config.json\""); });
  EXPECT_NE(e.find("mistral-7b-v0.1/config.json: sliding_window: 4096 tokens, shorter than model.seq_len = 32768"),
            std::string::npos)
      << e;

  e = refusal([] { load("hf_config: \"opt-350m/config.json\""); });
  EXPECT_NE(e.find("opt-350m/config.json: word_embed_proj_dim: 512 differs from hidden_size = 1024"), std::string::npos)
      << e;

  // Llama 2's 4096 positions cannot hold an 8192-token sequence.
  e = refusal([] { load("hf_config: \"llama-2-7b/config.json\"\nseq_len: 8192"); });
  EXPECT_NE(e.find("llama-2-7b/config.json: max_position_embeddings: 4096 positions: model.seq_len = 8192"),
            std::string::npos)
      << e;

  e = refusal([] { load("hf_config: \"no-such/config.json\""); });
  EXPECT_NE(e.find("no-such/config.json"), std::string::npos) << e;
  e = refusal([] { load("hf_config: \"gpt2\""); });  // a directory
  EXPECT_NE(e.find("gpt2"), std::string::npos) << e;
  EXPECT_NE(e.find("hf_config named by"), std::string::npos) << e;
}

// Variations of a config, written to a temporary folder: each refused by its field.
TEST(HfConfig, MalformedOrUnsupportedConfigs) {
  char tmpl[] = "/tmp/tandem-hf-XXXXXX";
  ASSERT_TRUE(mkdtemp(tmpl));
  const std::string dir = tmpl;
  auto with = [&](const std::string& json) {
    const std::string path = dir + "/config.json";
    std::ofstream(path) << json;
    return refusal([&] { load("hf_config: \"" + path + "\""); });
  };
  const std::string sizes =
      "\"hidden_size\": 256, \"num_attention_heads\": 4, \"intermediate_size\": 512, \"vocab_size\": 1000, "
      "\"max_position_embeddings\": 128";
  const std::string llama = "\"model_type\": \"llama\", \"num_hidden_layers\": 2, " + sizes;
  const std::string llama_without_layers = "\"model_type\": \"llama\", " + sizes;
  std::string e = with("{" + llama + ", \"head_dim\": 32}");  // 256 / 4 = 64
  EXPECT_NE(e.find("config.json: head_dim: 32 differs from hidden / heads = 256 / 4"), std::string::npos) << e;
  e = with("{" + llama + ", \"hidden_act\": \"gelu\"}");
  EXPECT_NE(e.find("config.json: hidden_act: \"gelu\": tandem models the gated MLP of llama with silu"),
            std::string::npos)
      << e;
  e = with("{\"model_type\": \"qwen2\", \"num_hidden_layers\": 2, \"hidden_size\": 256, \"num_attention_heads\": 4, "
           "\"intermediate_size\": 512, \"vocab_size\": 1000, \"max_position_embeddings\": 128, "
           "\"use_sliding_window\": true, \"sliding_window\": 64}");
  EXPECT_NE(e.find("config.json: sliding_window: 64 tokens, shorter than model.seq_len = 128"), std::string::npos) << e;
  e = with("{\"model_type\": \"gemma\"}");
  EXPECT_NE(e.find("config.json: model_type: \"gemma\" is not a family tandem reads"), std::string::npos) << e;
  e = with("{\"num_hidden_layers\": 2}");
  EXPECT_NE(e.find("config.json: model_type: required"), std::string::npos) << e;
  e = with("{\"model_type\": \"llama\", \"hidden_size\": 256}");
  EXPECT_NE(e.find("config.json: num_hidden_layers: required for model_type llama"), std::string::npos) << e;
  e = with("{\"model_type\": \"qwen2_moe\", \"num_experts\": 60}");
  EXPECT_NE(e.find("config.json: num_experts: 60 experts"), std::string::npos) << e;
  e = with("{" + llama_without_layers + ", \"num_hidden_layers\": 2.5}");
  EXPECT_NE(e.find("config.json: num_hidden_layers: expected an integer, got \"2.5\""), std::string::npos) << e;
  e = with("{" + llama + ", \"tie_word_embeddings\": 1}");
  EXPECT_NE(e.find("config.json: tie_word_embeddings: expected true or false"), std::string::npos) << e;
  e = with("{\"model_type\": \"llama\",\n \"hidden_size\": }");
  EXPECT_NE(e.find("config.json:2: not JSON"), std::string::npos) << e;
  e = with("[1, 2]");
  EXPECT_NE(e.find("holds an array"), std::string::npos) << e;
  e = with(std::string(100000, '['));  // Boost's parser would recurse 100,000 deep
  EXPECT_NE(e.find("nested deeper than 64 levels"), std::string::npos) << e;
  e = with("{" + llama_without_layers + ", \"num_hidden_layers\": 0}");
  EXPECT_NE(e.find("config.json: num_hidden_layers: must be between 1 and"), std::string::npos) << e;
  e = with("{" + llama + ", \"num_hidden_layers\": 4}");
  EXPECT_NE(e.find("config.json: num_hidden_layers: appears twice"), std::string::npos) << e;
  fs::remove_all(dir);
}

}  // namespace
}  // namespace tandem
