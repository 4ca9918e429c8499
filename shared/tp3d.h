// 3D tensor parallelism in the step generator (tp_mode 3d, q x q x q cube; shared/tp3d_groups.h
// for the cube, the groups and who holds which block). Private to the generator files, like
// shared/tp2d.h, whose layer body (grid_layer_*) and split layer norm it reuses.
//
//  - tp3d_linear.cc: the linear layer (Bian et al. 2021, arXiv 2105.14450, as Colossal-AI codes it:
//    legacy/nn/layer/parallel_3d/_operation.py _Linear3D): all-gather the input over the input
//    axis, the weight over B, one local GEMM, reduce-scatter the output over the output axis.
//    qkv and fc1 take input axis A and output axis C, o and fc2 the two swapped. Backward:
//    all-gather dY over the output axis; dX = dY W', reduce-scattered over the input axis;
//    dW = dY^T X', reduce-scattered over B. Stated difference: Colossal-AI saves the gathered X'
//    and W' for the backward; tandem keeps the local blocks and gathers them again (less
//    activation memory, one more all-gather of each per linear).
//  - tp3d_embedding_head.cc: the table (embedding, or untied head) held as vocabulary block
//    a*q + b (of q^2), feature block c, gathered over B then A into [vocab, h/q] of feature block
//    c. Head above 2048 tokens of vocabulary (as Colossal-AI chooses, shared/tp2d.h): the
//    classifier as a 3D linear on the table blocks (VocabParallelClassifier3D), logits
//    [n, vocab/q] of batch block b*q + c, vocabulary block a, the loss's all-reduces over A, the
//    loss summed over C and B. Otherwise logits [n, vocab] partial over the feature blocks,
//    all-reduced over C; the loss unsplit on every rank, summed over the batch blocks
//    (all-reduce over A, then B). The table
//    gradient is reduce-scattered back over A then B. The norms' feature block c is held alike
//    over A and B: its gradient is all-reduced over A and B with the bucket's data-parallel
//    reduction (Colossal-AI LayerNorm3D: the same, over its input x weight group).
#pragma once

#include "shared/tp2d.h"
#include "shared/tp3d_groups.h"

namespace tandem {

inline bool tp3d(const StepState& st) { return st.dims.tp3d_q > 1; }

// This rank's group along axis 1 (A), 2 (B) or 3 (C).
GroupId tp3d_group(const StepState& st, int axis);

// tp3d_linear.cc: the layer body's ops (grid_layer_*) under 3D.
GridLayerOps tp3d_layer_ops(const StepState& st);

// tp3d_embedding_head.cc: the grid_* ends' ops (the 3D table and loss reductions).
GridEndOps tp3d_end_ops(const StepState& st);
// All-reduce over A and B of the gradients of the norms of bucket k's units.
void tp3d_reduce_replicated_grads(StepState& st, int k);

// grid_ops.cc: whether the rank's program runs on a grid of blocks (2D, 2.5D or 3D), and that
// grid's ops for the layer body and the two ends (shared/tp2d.h).
inline bool grid_tp(const StepState& st) { return tp2d(st) || tp3d(st); }
GridLayerOps grid_layer_ops(const StepState& st);
GridEndOps grid_end_ops(const StepState& st);

}  // namespace tandem
