// model { hf_config: "path/config.json" } (or --set model.hf_config=PATH): the model part filled
// from a Hugging Face transformers config.json of a dense decoder, read with Boost.PropertyTree's
// JSON parser after shared/input_file.h's checks (a regular file of at most kMaxHfConfigBytes).
//
// Families (config.json `model_type`) and the fields read, by their published names:
//   gpt2      n_layer, n_embd, n_head, n_inner (null: 4 x hidden), vocab_size, n_positions,
//             activation_function; layernorm; tied unless tie_word_embeddings says otherwise
//   gpt_neox  num_hidden_layers, hidden_size, num_attention_heads, intermediate_size, vocab_size,
//             max_position_embeddings, hidden_act; layernorm; untied by default
//   opt       num_hidden_layers, hidden_size, num_attention_heads, ffn_dim, vocab_size,
//             max_position_embeddings, activation_function; layernorm; tied by default
//   llama, mistral, qwen2  num_hidden_layers, hidden_size, num_attention_heads,
//             num_key_value_heads (absent: = heads), intermediate_size, vocab_size,
//             max_position_embeddings, hidden_act (silu: swiglu, the gated MLP); rmsnorm; untied
//             by default
// tie_word_embeddings, where present, gives tied_embeddings. Non-gated activations (gelu,
// gelu_new, gelu_fast, gelu_pytorch_tanh, quick_gelu, relu) become tandem's "gelu": one
// element-wise kernel of the same bytes (OPT's relu included). max_position_embeddings (n_positions)
// is the default of model.seq_len and its upper bound. model.name defaults to _name_or_path, else
// model_type.
//
// What tandem cannot model is refused by name (bad input, exit 2), never approximated: a mixture
// of experts (num_local_experts, num_experts, n_routed_experts, moe_num_experts above 1), a
// sliding attention window shorter than the sequence (Mistral's sliding_window; Qwen2's when
// use_sliding_window is true), a head_dim other than hidden / heads, OPT's word_embed_proj_dim
// other than hidden_size (a projection), another model_type.
//
// Precedence: written in the scenario file, hf_config is like a preset: the model block's own
// fields and --set model.* fields override it. Given with --set, it replaces the model the file
// describes (the fields above), and only --set model.* fields override it; the file's seq_len
// stays. A relative path is taken from the scenario file's folder; given with --set, from the
// working directory, else the scenario file's folder.
//
// Errors name the config file, its field and the rule, then where hf_config was named:
//   llama/config.json: num_local_experts: 8 experts: ... (hf_config named by s.textproto:5)
#pragma once

#include <cstdint>

#include "shared/scenario_text.h"

namespace tandem {

inline constexpr int64_t kMaxHfConfigBytes = int64_t(1) << 20;  // published configs are a few KiB

// Fills scenario.model from the config.json model.hf_config names, if it names one, and records
// the config's fields as the origins of what it filled.
void merge_hf_config(proto::Scenario& scenario, Origins& origins);

}  // namespace tandem
