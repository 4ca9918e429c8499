// strategy.dtype = fp8 as Transformer Engine runs it under Megatron-Core (the stack of NVIDIA's
// NeMo 24.07 FP8 measurements, traces/reference/nemo_24.07_h100_fp8.tsv). The rules, each with
// its source (TE = NVIDIA/TransformerEngine v1.8 @ 3ec998e96c82bc30247560ced6170c4221ca2b5a,
// MC = NVIDIA/Megatron-LM core_v0.8.0 @ baf94af3c667248865f23df73b9fb8e2395e6fd0,
// NeMo = NVIDIA/NeMo @ 8e3d65dcfe3504689bfc5b6e67d502780aacad41):
//  - Which GEMMs: the four linears of each transformer layer (qkv, proj, fc1, fc2) are TE modules
//    (MC megatron/core/models/gpt/gpt_layer_specs.py: TELayerNormColumnParallelLinear,
//    TERowParallelLinear) run inside fp8_autocast (MC megatron/core/transformer/transformer_block.py
//    forward). The output head is Megatron's own ColumnParallelLinear (MC
//    megatron/core/models/gpt/gpt_model.py, output_layer) and stays bf16; so do embedding,
//    attention (TE DotProductAttention runs FP8 only with recipe.fp8_dpa, default False: TE
//    transformer_engine/common/recipe/__init__.py, DelayedScaling), norms, activations, softmax,
//    the loss and every collective (the activations between modules are bf16).
//  - Formats: the HYBRID recipe (NeMo examples/nlp/language_modeling/conf/megatron_gpt_config.yaml
//    fp8_hybrid: True; TE recipe Format.HYBRID): forward tensors e4m3 (max 448), backward tensors
//    (the output gradient) e5m2 (max 57344). So the forward GEMM runs e4m3 x e4m3 and both backward
//    GEMMs (dgrad, wgrad) take an e5m2 gradient (TE get_fp8_te_dtype, transformer_engine/pytorch/fp8.py).
//  - Scaling: per-tensor delayed scaling (TE DelayedScaling): each FP8 tensor keeps a scale, a
//    scale_inv and an amax history of amax_history_len steps, all fp32 (TE
//    transformer_engine/pytorch/module/base.py set_meta_tensor: 3 tensors per GEMM forward -
//    input, weight, output - and 2 backward - grad_output, grad_input; amax_history is
//    [amax_history_len, tensors]). NeMo sets fp8_amax_history_len: 1024, fp8_amax_compute_algo: max.
//  - Weights: the bf16 weight is cast once per iteration, on the first micro-batch, into a cached
//    FP8 workspace with its transpose (the dgrad GEMM needs W^T in FP8; Hopper FP8 GEMMs take the
//    TN layout only) (TE linear.py forward: get_fp8_workspace(cache_name="weight",
//    with_transpose=True); base.py get_fp8_workspace; float8_tensor.py transpose cache). So each
//    FP8 GEMM weight holds 1 + 1 bytes per element more, all iteration long. Master weights stay
//    fp32 in the optimizer and the gradients bf16 (shared/grad_sync.cc, as for bf16).
#pragma once

#include <cstdint>

namespace tandem::fp8 {

inline constexpr int kAmaxHistoryLen = 1024;      // NeMo fp8_amax_history_len (TE's default too)
inline constexpr int kForwardTensorsPerGemm = 3;  // input, weight, output (TE base.py set_meta_tensor)
inline constexpr int kBackwardTensorsPerGemm = 2; // grad_output, grad_input
inline constexpr int kGemmsPerLayer = 4;          // qkv, proj, fc1, fc2
inline constexpr int kWeightCopyBytes = 2;        // FP8 weight (1 byte) + its FP8 transpose (1 byte)

// Bytes of the scaling state of one GEMM: for each of its 5 tensors a scale and a scale_inv
// (fp32) and an amax history of kAmaxHistoryLen fp32 values.
inline constexpr int64_t scaling_state_bytes_per_gemm() {
  return int64_t(kForwardTensorsPerGemm + kBackwardTensorsPerGemm) * (4 + 4 + 4 * int64_t(kAmaxHistoryLen));
}

}  // namespace tandem::fp8
