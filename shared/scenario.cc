// The plain-value side of a scenario: element sizes, the names of every enumerated choice,
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

#include "shared/resource_limit.h"
#include "shared/scenario.h"
#include "shared/scenario_spellings.h"

namespace tandem {

int dtype_bytes(DType t) {
  switch (t) {
    case DType::kFp32: return 4;
    case DType::kFp16: return 2;
    case DType::kBf16: return 2;
    case DType::kInt32: return 4;
    case DType::kUint8: return 1;
    case DType::kFp8:
    case DType::kFp8E4M3:
    case DType::kFp8E5M2: return 1;
  }
  return 0;
}

namespace {

template <class E, size_t N>
const char* spelled(const Spelling<E> (&table)[N], E value) {
  for (const Spelling<E>& s : table)
    if (s.value == value) return s.name;
  return "?";
}

}  // namespace

const char* to_string(DType v) { return spelled(kDTypeSpellings, v); }
const char* to_string(Norm v) { return spelled(kNormSpellings, v); }
const char* to_string(Activation v) { return spelled(kActivationSpellings, v); }
const char* to_string(TpMode v) { return spelled(kTpModeSpellings, v); }
const char* to_string(PpSchedule v) { return spelled(kPpScheduleSpellings, v); }
const char* to_string(SpMode v) { return spelled(kSpModeSpellings, v); }
const char* to_string(Recompute v) { return spelled(kRecomputeSpellings, v); }
const char* to_string(Offload v) { return spelled(kOffloadSpellings, v); }
const char* to_string(Topology v) { return spelled(kTopologySpellings, v); }
const char* to_string(CollectiveAlgorithm v) { return spelled(kCollectiveAlgorithmSpellings, v); }
const char* to_string(CpuVendor v) { return spelled(kCpuVendorSpellings, v); }
const char* to_string(GradDType v) { return spelled(kGradDTypeSpellings, v); }
const char* to_string(OptimizerStateDType v) { return spelled(kOptimizerStateDTypeSpellings, v); }
const char* to_string(MasterParams v) { return spelled(kMasterParamsSpellings, v); }

int64_t ModelSpec::parameters() const {
  const int64_t h = hidden;
  const int64_t f = ffn_hidden;
  const int64_t v = vocab;
  const int64_t k = static_cast<int64_t>(kv_heads) * (heads > 0 ? hidden / heads : 0);
  const bool swiglu = activation == Activation::kSwiglu;
  const int64_t norm_params = norm == Norm::kLayerNorm ? 2 * h : h;

  // Checked: the counts come from the user (the loader bounds them so that this fits).
  constexpr const char* what = "model parameters";
  int64_t layer = checked_add(checked_mul(2 * h, h, what), checked_mul(2 * h, k, what), what);
  layer = checked_add(layer, checked_mul((swiglu ? 3 : 2) * h, f, what), what);
  layer = checked_add(layer, 2 * norm_params, what);

  const int64_t table = checked_mul(v, h, what);
  int64_t total = checked_add(table, checked_mul(layers, layer, what), what);
  total = checked_add(total, norm_params, what);
  if (!tied_embeddings) total = checked_add(total, table, what);
  return total;
}

// Integer work (embedding lookups, masks) has no tensor-core rate of its own here; it is memory
// bound, and the fp32 rate serves as its upper bound.
double ClusterSpec::peak_tflops(DType t) const {
  switch (t) {
    case DType::kFp16: return peak_fp16_tflops;
    case DType::kBf16: return peak_bf16_tflops;
    case DType::kFp8:
    case DType::kFp8E4M3:
    case DType::kFp8E5M2: return peak_fp8_tflops;
    case DType::kFp32:
    case DType::kInt32:
    case DType::kUint8: return peak_fp32_tflops;
  }
  return peak_fp32_tflops;
}

int64_t ClusterSpec::hbm_bytes() const { return static_cast<int64_t>(std::llround(hbm_gib * 1073741824.0)); }

}  // namespace tandem
