// A Hugging Face config.json as the model part of a scenario (shared/hf_config.h).
#include "shared/hf_config.h"

#include <boost/property_tree/json_parser.hpp>
#include <boost/property_tree/ptree.hpp>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <optional>
#include <set>
#include <sstream>
#include <string>
#include <system_error>

#include "shared/error.h"
#include "shared/input_file.h"
#include "shared/scenario_limits.h"

namespace tandem {
namespace {

namespace pt = boost::property_tree;

// The published field names of one family (nullptr: the family has no such field).
struct Family {
  const char* model_type;
  const char* layers;
  const char* hidden;
  const char* heads;
  const char* kv_heads;
  const char* ffn;
  bool ffn_required;  // false: absent or null means 4 x hidden (GPT-2's n_inner)
  const char* vocab;
  const char* max_positions;
  const char* activation;
  bool gated;  // the MLP multiplies a gate: silu -> swiglu
  const char* norm;
  bool tied_by_default;
};

constexpr Family kFamilies[] = {
    {"gpt2", "n_layer", "n_embd", "n_head", nullptr, "n_inner", false, "vocab_size", "n_positions",
     "activation_function", false, "layernorm", true},
    {"gpt_neox", "num_hidden_layers", "hidden_size", "num_attention_heads", nullptr, "intermediate_size", true,
     "vocab_size", "max_position_embeddings", "hidden_act", false, "layernorm", false},
    {"opt", "num_hidden_layers", "hidden_size", "num_attention_heads", nullptr, "ffn_dim", true, "vocab_size",
     "max_position_embeddings", "activation_function", false, "layernorm", true},
    {"llama", "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
     true, "vocab_size", "max_position_embeddings", "hidden_act", true, "rmsnorm", false},
    {"mistral", "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
     true, "vocab_size", "max_position_embeddings", "hidden_act", true, "rmsnorm", false},
    {"qwen2", "num_hidden_layers", "hidden_size", "num_attention_heads", "num_key_value_heads", "intermediate_size",
     true, "vocab_size", "max_position_embeddings", "hidden_act", true, "rmsnorm", false},
};

constexpr const char* kPointwise[] = {"gelu", "gelu_new", "gelu_fast", "gelu_pytorch_tanh", "quick_gelu", "relu"};
constexpr const char* kGatedSilu[] = {"silu", "swish"};
constexpr const char* kExpertFields[] = {"num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"};

// JSON nesting deeper than this is refused before parsing: Boost's parser recurses once per level.
constexpr int kMaxNesting = 64;

class Config {
 public:
  Config(std::string path, std::string named_by) : path_(std::move(path)), named_by_(std::move(named_by)) {}

  void parse(const std::string& text) {
    check_nesting(text);
    std::istringstream in(text);
    try {
      pt::read_json(in, tree_);
    } catch (const pt::json_parser_error& e) {
      throw Error(path_ + ":" + std::to_string(e.line()) + ": not JSON: " + e.message() + suffix());
    }
    if (!tree_.empty() && tree_.front().first.empty())
      throw Error(path_ + ": a config.json holds one JSON object, this holds an array" + suffix());
    if (tree_.empty()) throw Error(path_ + ": a config.json holds one JSON object of fields, this holds none" + suffix());
    std::set<std::string> seen;
    for (const auto& [key, unused] : tree_)
      if (!seen.insert(key).second)
        throw error(key, "appears twice: which value is meant is unclear (Python's json reader keeps the last)");
  }

  Error error(const std::string& field, const std::string& rule) const {
    return Error(path_ + ": " + field + ": " + rule + suffix());
  }
  std::string origin(const std::string& field) const { return path_ + ": " + field + suffix(); }

  // The text of a top-level scalar field; nullopt when absent or null.
  std::optional<std::string> scalar(const std::string& key) const {
    auto it = tree_.find(key);
    if (it == tree_.not_found()) return std::nullopt;
    if (!it->second.empty()) throw error(key, "expected a number, string or boolean, got an object or array");
    if (it->second.data() == "null") return std::nullopt;
    return it->second.data();
  }

  std::optional<int64_t> integer(const std::string& key) const {
    const auto s = scalar(key);
    if (!s) return std::nullopt;
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(s->data(), s->data() + s->size(), v);
    if (ec != std::errc() || end != s->data() + s->size()) throw error(key, "expected an integer, got \"" + *s + "\"");
    return v;
  }

  // A positive integer that fits tandem's field (at most `max`).
  std::optional<int32_t> positive(const std::string& key, int64_t max) const {
    const auto v = integer(key);
    if (!v) return std::nullopt;
    if (*v < 1 || *v > max)
      throw error(key, "must be between 1 and " + std::to_string(max) + ", got " + std::to_string(*v));
    return int32_t(*v);
  }

  std::optional<bool> boolean(const std::string& key) const {
    const auto s = scalar(key);
    if (!s) return std::nullopt;
    if (*s == "true") return true;
    if (*s == "false") return false;
    throw error(key, "expected true or false, got \"" + *s + "\"");
  }

 private:
  std::string suffix() const { return " (hf_config named by " + named_by_ + ")"; }

  void check_nesting(const std::string& text) const {
    int depth = 0;
    bool in_string = false;
    for (size_t i = 0; i < text.size(); ++i) {
      const char c = text[i];
      if (in_string) {
        if (c == '\\') ++i;
        else if (c == '"') in_string = false;
      } else if (c == '"') {
        in_string = true;
      } else if (c == '{' || c == '[') {
        if (++depth > kMaxNesting)
          throw Error(path_ + ": nested deeper than " + std::to_string(kMaxNesting) +
                      " levels: not a config.json" + suffix());
      } else if (c == '}' || c == ']') {
        --depth;
      }
    }
  }

  std::string path_, named_by_;
  pt::ptree tree_;
};

template <size_t N>
bool one_of(const std::string& s, const char* const (&list)[N]) {
  return std::find_if(std::begin(list), std::end(list), [&](const char* x) { return s == x; }) != std::end(list);
}

template <size_t N>
std::string listed(const char* const (&list)[N]) {
  std::string out;
  for (const char* x : list) out += (out.empty() ? "" : ", ") + std::string(x);
  return out;
}

std::string resolve_path(const std::string& name, bool from_set, const std::string& scenario_file) {
  namespace fs = std::filesystem;
  fs::path p(name);
  if (!p.is_relative()) return p.string();
  const fs::path beside = fs::path(scenario_file).parent_path() / p;
  if (!from_set) return beside.string();
  std::error_code ignored;
  return !fs::exists(p, ignored) && fs::exists(beside, ignored) ? beside.string() : p.string();
}

}  // namespace

void merge_hf_config(proto::Scenario& scenario, Origins& origins) {
  if (!scenario.has_model() || !scenario.model().has_hf_config()) return;
  proto::Model& m = *scenario.mutable_model();
  const std::string named_by = origins.at("model.hf_config");
  auto by_set = [&](const std::string& field) {
    auto it = origins.where.find(field);
    return it != origins.where.end() && it->second.rfind("--set ", 0) == 0;
  };
  const bool from_set = by_set("model.hf_config");
  if (m.hf_config().empty()) throw Error(named_by + ": model.hf_config: empty: give the path of a config.json");
  const std::string path = resolve_path(m.hf_config(), from_set, origins.file);

  Config config(path, named_by);
  try {
    config.parse(read_input_file(path, "Hugging Face config", kMaxHfConfigBytes));
  } catch (const Error& e) {
    const std::string said = e.what();
    if (said.find("(hf_config named by ") != std::string::npos) throw;
    throw Error(said + " (hf_config named by " + named_by + ")");
  }

  // What no family of tandem's models: refused first, with the field that says it.
  for (const char* key : kExpertFields)
    if (const auto n = config.integer(key); n && *n > 1)
      throw config.error(key, std::to_string(*n) + " experts: a mixture of experts; tandem models dense MLPs only");
  const auto type = config.scalar("model_type");
  if (!type) throw config.error("model_type", "required: it names the model family (gpt2, gpt_neox, opt, llama, mistral, qwen2)");
  const Family* family = nullptr;
  for (const Family& f : kFamilies)
    if (*type == f.model_type) family = &f;
  if (!family)
    throw config.error("model_type", "\"" + *type + "\" is not a family tandem reads; it reads gpt2, gpt_neox, opt, "
                                     "llama, mistral, qwen2");

  // A field of the model part is filled unless set where it overrides the config: in the model
  // block beside a hf_config of the file, or by --set.
  auto fills = [&](const char* field) {
    const std::string key = std::string("model.") + field;
    return from_set ? !by_set(key) : !m.GetReflection()->HasField(m, m.GetDescriptor()->FindFieldByName(field));
  };
  auto took = [&](const char* field, const char* from) { origins.where[std::string("model.") + field] = config.origin(from); };
  auto required = [&](const char* key, int64_t max) {
    const auto v = config.positive(key, max);
    if (!v) throw config.error(key, std::string("required for model_type ") + family->model_type + " (absent or null)");
    return *v;
  };

  if (fills("name")) {
    m.set_name(config.scalar("_name_or_path").value_or(family->model_type));
    took("name", config.scalar("_name_or_path") ? "_name_or_path" : "model_type");
  }
  if (fills("layers")) {
    m.set_layers(required(family->layers, kMaxLayers));
    took("layers", family->layers);
  }
  if (fills("hidden")) {
    m.set_hidden(required(family->hidden, kMaxHidden));
    took("hidden", family->hidden);
  }
  if (fills("heads")) {
    m.set_heads(required(family->heads, kMaxHidden));
    took("heads", family->heads);
  }
  if (fills("kv_heads")) {
    const auto kv = family->kv_heads ? config.positive(family->kv_heads, kMaxHidden) : std::nullopt;
    if (kv) {
      m.set_kv_heads(*kv);
      took("kv_heads", family->kv_heads);
    } else {
      m.clear_kv_heads();  // as many as heads
    }
  }
  if (fills("ffn_hidden")) {
    const auto ffn = family->ffn_required ? std::optional<int32_t>(required(family->ffn, INT32_MAX))
                                          : config.positive(family->ffn, INT32_MAX);
    if (ffn) {
      m.set_ffn_hidden(*ffn);
      took("ffn_hidden", family->ffn);
    } else {
      m.clear_ffn_hidden();  // 4 x hidden
    }
  }
  if (fills("vocab")) {
    m.set_vocab(required(family->vocab, INT32_MAX));
    took("vocab", family->vocab);
  }
  if (fills("norm")) {
    m.set_norm(family->norm);
    took("norm", "model_type");
  }
  if (fills("activation")) {
    const std::string act = config.scalar(family->activation).value_or(family->gated ? "silu" : "gelu");
    if (family->gated && !one_of(act, kGatedSilu))
      throw config.error(family->activation, "\"" + act + "\": tandem models the gated MLP of " + family->model_type +
                                                 " with silu (swiglu) only; accepted: " + listed(kGatedSilu));
    if (!family->gated && !one_of(act, kPointwise))
      throw config.error(family->activation, "\"" + act + "\": not an activation tandem models; accepted: " +
                                                 listed(kPointwise) + " (all costed as one element-wise kernel)");
    m.set_activation(family->gated ? "swiglu" : "gelu");
    took("activation", family->activation);
  }
  if (fills("tied_embeddings")) {
    const auto tied = config.boolean("tie_word_embeddings");
    m.set_tied_embeddings(tied.value_or(family->tied_by_default));
    took("tied_embeddings", tied ? "tie_word_embeddings" : "model_type");
  }

  // Maximum positions: the default sequence length, and its bound.
  const int32_t max_positions = required(family->max_positions, kMaxSeqLen);
  if (!m.has_seq_len()) {
    m.set_seq_len(max_positions);
    took("seq_len", family->max_positions);
  } else if (m.seq_len() > max_positions) {
    throw config.error(family->max_positions, std::to_string(max_positions) + " positions: model.seq_len = " +
                                                  std::to_string(m.seq_len()) + " (" + origins.at("model.seq_len") +
                                                  ") is longer than the model's position embeddings reach");
  }

  // What the config describes that tandem's model part cannot hold.
  if (const auto hd = config.integer("head_dim"); hd && *hd != m.hidden() / std::max(1, m.heads()))
    throw config.error("head_dim", std::to_string(*hd) + " differs from hidden / heads = " + std::to_string(m.hidden()) +
                                       " / " + std::to_string(m.heads()) + ": tandem models heads of hidden / heads");
  if (std::string(family->model_type) == "opt")
    if (const auto proj = config.integer("word_embed_proj_dim"); proj && *proj != m.hidden())
      throw config.error("word_embed_proj_dim", std::to_string(*proj) + " differs from hidden_size = " +
                                                    std::to_string(m.hidden()) +
                                                    ": the projections in and out of the embedding are not modelled");
  const bool windowed = std::string(family->model_type) == "mistral" ||
                        (std::string(family->model_type) == "qwen2" && config.boolean("use_sliding_window").value_or(false));
  if (windowed)
    if (const auto w = config.integer("sliding_window"); w && *w < m.seq_len())
      throw config.error("sliding_window", std::to_string(*w) + " tokens, shorter than model.seq_len = " +
                                               std::to_string(m.seq_len()) + " (" + origins.at("model.seq_len") +
                                               "): tandem models full causal attention over the sequence; a sequence of "
                                               "at most " + std::to_string(*w) + " tokens is the same attention");
}

}  // namespace tandem
