// strategy.dtype fp8: what Transformer Engine adds to the schedule of a bf16 step (rules and
// sources in shared/fp8_recipe.h).
//
// Memory, for each transformer layer of this rank, allocated for the whole iteration as workspace
// (TE's name for them: _fp8_workspaces):
//   L<l>.fp8_weight    its GEMM weights (qkv, proj, fc1, fc2: the layer's elements less its norms)
//                      cast to FP8 e4m3, 1 byte each
//   L<l>.fp8_weight_t  their FP8 transpose, 1 byte each (for the dgrad GEMM)
//   L<l>.fp8_scaling   scale, scale_inv and amax history of the 4 GEMMs' 5 tensors, fp32
//
// The amax reduction: TE (v1.8 transformer_engine/pytorch/fp8.py, reduce_and_update_fp8_tensors)
// concatenates the latest amax of every FP8 tensor registered on this rank (all its layers, all
// model chunks: 3 per GEMM forward, 2 backward, fp32) and all-reduces it with MAX over the fp8
// group, synchronously (async_op=False: the compute stream waits), at every fp8_autocast exit
// (the end of a chunk's forward, fp8.py fp8_autocast_exit) and in the backward of the chunk's
// first FP8 module (linear.py / layernorm_linear.py / layernorm_mlp.py backward). Megatron-Core
// passes the tensor + data (+ context) parallel group (core_v0.8.0 transformer_block.py,
// parallel_state.get_amax_reduction_group(with_context_parallel=True)). tandem has no
// tensor+data group kind: the same MAX is taken over the tensor group, then over the data group
// (equal result; the time of two small all-reduces instead of one over their product). Both sit
// on the compute stream, which waits for them as the framework's does.
//
// Not modelled: the casts (of the weights once per iteration, ~4 bytes of HBM traffic per weight
// element; of activations, fused into the norms and activation kernels by TE) and the fused
// amax/scale update kernel after each reduction.
#include "shared/fp8_recipe.h"
#include "shared/step_state.h"

namespace tandem {

void emit_fp8_state(StepState& st) {
  for (const ParamUnit& u : st.layout.units) {
    if (u.kind != ParamUnit::Kind::kLayer) continue;
    const int64_t gemm_weights = u.elements - u.norm_elements;  // tandem's layers have no biases
    st.allocate("fp8_weight", u.layer, -1, gemm_weights, DType::kFp8E4M3, BufferRole::kWorkspace);
    st.allocate("fp8_weight_t", u.layer, -1, gemm_weights, DType::kFp8E4M3, BufferRole::kWorkspace);
    st.allocate("fp8_scaling", u.layer, -1, fp8::kGemmsPerLayer * fp8::scaling_state_bytes_per_gemm() / 4,
                DType::kFp32, BufferRole::kWorkspace);
  }
}

void emit_amax_reduction(StepState& st, bool forward, int mb) {
  const bool tp = st.grid.tp() > 1, dp = st.grid.dp() > 1;
  if (!tp && !dp) return;
  int64_t layers = 0;
  for (const ParamUnit& u : st.layout.units) layers += u.kind == ParamUnit::Kind::kLayer ? 1 : 0;
  const int per_gemm = forward ? fp8::kForwardTensorsPerGemm : fp8::kBackwardTensorsPerGemm;
  const int64_t amaxes = layers * fp8::kGemmsPerLayer * per_gemm;
  const BufferId b = st.allocate(forward ? "amax_fwd" : "amax_bwd", -1, mb, amaxes, DType::kFp32, BufferRole::kComm);
  for (const GroupId g : {tp ? st.tp_group() : kNoId, dp ? st.groups.dp(st.coord) : kNoId}) {
    if (g == kNoId) continue;
    Collective c;
    c.op = CollectiveOp::kAllReduce;
    c.reduce = ReduceOp::kMax;
    c.group = g;
    c.bytes = amaxes * 4;
    c.dtype = DType::kFp32;
    c.phase = forward ? Phase::kForward : Phase::kBackward;
    c.microbatch = mb;
    c.buffers = {b, b};
    st.program.collective(std::move(c), Stream::kCompute);
  }
  st.release(b);
}

}  // namespace tandem
