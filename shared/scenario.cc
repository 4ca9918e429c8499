// The plain-value side of a scenario: element sizes, the user spellings of every enumerated choice,
// the parameter count of a model and the per-dtype peak of a cluster.
//
// Parameter count of ModelSpec (h hidden, l layers, V vocab, f ffn_hidden, k = kv_heads*head_dim):
//   embedding                  V*h               (no learned position embedding: tandem's model
//                                                 has none; Megatron's GPT adds seq_len*h more)
//   per layer, attention       2*h*h + 2*h*k     (Q and O are h x h; K and V are h x k)
//   per layer, MLP             2*h*f (gelu)  or  3*h*f (swiglu: gate, up, down)
//   no biases                  as in PaLM and Llama; Megatron's GPT adds 9h per layer (< 0.01 %)
//   per layer, two norms       2*(2h) for layernorm (gamma, beta), 2*h for rmsnorm (gamma)
//   final norm                 2h (layernorm) or h (rmsnorm)
//   output head                V*h only when the embedding is not tied
// For GPT-3 175B (l 96, h 12288, V 51200, f 4h) that is 12*l*h^2 + 4*l*h + V*h + 2h
// = 174,580,064,256 — Narayanan et al. (SC21, Table 2) count 174.6B with biases and the position
// embedding. The schedule generators hold exactly these tensors (shared/param_layout.h).
#include <cmath>

#include "shared/scenario.h"

namespace tandem {

int dtype_bytes(DType t) {
  switch (t) {
    case DType::kFp32: return 4;
    case DType::kFp16: return 2;
    case DType::kBf16: return 2;
    case DType::kInt32: return 4;
    case DType::kUint8: return 1;
  }
  return 0;
}

const char* to_string(DType t) {
  switch (t) {
    case DType::kFp32: return "fp32";
    case DType::kFp16: return "fp16";
    case DType::kBf16: return "bf16";
    case DType::kInt32: return "int32";
    case DType::kUint8: return "uint8";
  }
  return "?";
}

const char* to_string(Norm v) {
  switch (v) {
    case Norm::kLayerNorm: return "layernorm";
    case Norm::kRmsNorm: return "rmsnorm";
  }
  return "?";
}

const char* to_string(Activation v) {
  switch (v) {
    case Activation::kGelu: return "gelu";
    case Activation::kSwiglu: return "swiglu";
  }
  return "?";
}

const char* to_string(TpMode v) {
  switch (v) {
    case TpMode::k1d: return "1d";
    case TpMode::k2d: return "2d";
    case TpMode::k2p5d: return "2.5d";
    case TpMode::k3d: return "3d";
  }
  return "?";
}

const char* to_string(PpSchedule v) {
  switch (v) {
    case PpSchedule::kGpipe: return "gpipe";
    case PpSchedule::k1f1b: return "1f1b";
    case PpSchedule::kInterleaved: return "interleaved";
  }
  return "?";
}

const char* to_string(SpMode v) {
  switch (v) {
    case SpMode::kNone: return "none";
    case SpMode::kMegatron: return "megatron";
    case SpMode::kRing: return "ring";
    case SpMode::kUlysses: return "ulysses";
  }
  return "?";
}

const char* to_string(Recompute v) {
  switch (v) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
  }
  return "?";
}

const char* to_string(Offload v) {
  switch (v) {
    case Offload::kNone: return "none";
    case Offload::kOptimizer: return "optimizer";
    case Offload::kParams: return "params";
    case Offload::kAuto: return "auto";
  }
  return "?";
}

const char* to_string(Topology v) {
  switch (v) {
    case Topology::kFatTree: return "fat-tree";
    case Topology::kRailOptimized: return "rail-optimized";
  }
  return "?";
}

const char* to_string(CollectiveAlgorithm v) {
  switch (v) {
    case CollectiveAlgorithm::kAuto: return "auto";
    case CollectiveAlgorithm::kRing: return "ring";
    case CollectiveAlgorithm::kTree: return "tree";
  }
  return "?";
}

int64_t ModelSpec::parameters() const {
  const int64_t h = hidden;
  const int64_t f = ffn_hidden;
  const int64_t v = vocab;
  const int64_t k = static_cast<int64_t>(kv_heads) * (heads > 0 ? hidden / heads : 0);
  const bool swiglu = activation == Activation::kSwiglu;
  const int64_t norm_params = norm == Norm::kLayerNorm ? 2 * h : h;

  int64_t layer = 2 * h * h + 2 * h * k;
  layer += (swiglu ? 3 : 2) * h * f;
  layer += 2 * norm_params;

  int64_t total = v * h + layers * layer + norm_params;
  if (!tied_embeddings) total += v * h;
  return total;
}

// Integer work (embedding lookups, masks) has no tensor-core rate of its own here; it is memory
// bound, and the fp32 rate serves as its upper bound.
double ClusterSpec::peak_tflops(DType t) const {
  switch (t) {
    case DType::kFp16: return peak_fp16_tflops;
    case DType::kBf16: return peak_bf16_tflops;
    case DType::kFp32:
    case DType::kInt32:
    case DType::kUint8: return peak_fp32_tflops;
  }
  return peak_fp32_tflops;
}

int64_t ClusterSpec::hbm_bytes() const { return static_cast<int64_t>(std::llround(hbm_gib * 1073741824.0)); }

}  // namespace tandem
