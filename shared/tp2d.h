// 2D tensor parallelism in the step generator (tp_mode 2d, q x q grid; shared/tp2d_groups.h for
// the grid, the groups and who holds which block). Private to the generator files, like
// shared/step_state.h.
//
//  - summa.cc: the linear layer as SUMMA (van de Geijn & Watts 1997; Optimus, Xu et al. 2021,
//    arXiv 2104.05343, as Colossal-AI codes it: parallel_2d/_operation.py Matmul_ABT_2D): q steps,
//    step k broadcasting the activation block of column k along each row group and the weight
//    block of row k along each column group, then a local GEMM accumulate. Backward: dX in q steps
//    of {broadcast the weight block along the column group, GEMM, reduce the partial dX to its
//    owner along the row group}; dW in q steps of {broadcast the activation block along the row
//    group, GEMM, reduce the partial dW to its owner along the column group}.
//  - tp2d_layer_emitter.cc: the transformer layer: layer norm over feature blocks (the row
//    statistics all-reduced over the row group: 2 all-reduces of [b/q, s] forward, 1 of
//    [b/q, s, 2] backward), the four linears as SUMMA, attention on the rank's heads (feature
//    block j holds whole heads) for its batch block.
//  - tp2d_embedding_head.cc: embedding, head and loss. The table is held in blocks [vocab/q, h/q]
//    (vocabulary block i, feature block j: VocabParallelClassifier2D's weight layout). Above 2048
//    tokens of vocabulary (grid_vocab_parallel) the embedding is VocabParallelEmbedding2D's: every
//    token of the depth layer's share of the micro-batch looked up in the rank's vocabulary block
//    (zero outside it), the [q * b/q * s, h/q] partial sums reduce-scattered over the column group
//    by batch block; otherwise the table is all-gathered over the column group into the
//    [vocab, h/q] columns of feature block j and looked up locally. The head, as Colossal-AI chooses it
//    (grid_vocab_parallel): above 2048 tokens of vocabulary the vocabulary-parallel classifier
//    (summa_head_*: logits [b/q * s, vocab/q] of vocabulary block j) and loss (max, sum of
//    exponentials and target logit all-reduced over the row group); otherwise the table gathered
//    as for the embedding, partial logits [b/q * s, vocab] all-reduced over the row group and the
//    loss unsplit on every rank of the row.
//  - Parameters that every rank of a column group holds alike (the norms' feature block) get
//    their gradients all-reduced over the column group with the data-parallel reduction
//    (tp2d_reduce_replicated_grads). Colossal-AI splits them h/q^2 and gathers them instead.
#pragma once

#include "shared/step_state.h"
#include "shared/tp2d_groups.h"

namespace tandem {

// Whether the rank's program uses the 2D path (tp_mode 2d with q > 1, or 2.5d: SUMMA inside each
// depth layer, shared/tp2d_groups.h).
inline bool tp2d(const StepState& st) { return st.dims.tp2d_q > 1; }

// The row and column groups of this rank.
GroupId tp2d_row_group(const StepState& st);
GroupId tp2d_column_group(const StepState& st);
// A collective over a 2D group or a 3D axis group (on the tensor stream unless told); root is
// the index within the group. The depth groups of 2.5D go on the gradient stream (their
// weight-gradient all-reduces overlap the backward), and a group's collectives all on one stream.
void tp2d_collective(StepState& st, CollectiveOp op, GroupId group, int root, BufferId in, BufferId out,
                     int64_t bytes, Phase ph, int layer, int mb, DType dtype, Stream stream = Stream::kComm,
                     ReduceOp reduce = ReduceOp::kSum);

// Colossal-AI's default choice of head and loss on a grid (legacy/nn/layer/colossalai_layer/
// linear.py Classifier and embedding.py Embedding at 4f9953be, `vocab_parallel_limit: int = 2048`:
// a vocabulary above it takes the VocabParallelClassifier2D / 2p5D / 3D and, through
// env.vocab_parallel, legacy/nn/loss/__init__.py's VocabParallelCrossEntropyLoss2D / 2p5D / 3D).
inline constexpr int64_t kColossalVocabParallelLimit = 2048;
inline bool grid_vocab_parallel(const StepState& st) { return st.scenario.model.vocab > kColossalVocabParallelLimit; }

// summa.cc. Y [rows, out] = X [rows, in] W^T, all local blocks (W's block is [out, in]).
void summa_forward(StepState& st, Phase ph, int layer, int mb, BufferId x, BufferId w, BufferId y, int64_t rows,
                   int64_t out, int64_t in);
// Returns dX [rows, in] (named dx_name) and accumulates this rank's block of dW into dw.
BufferId summa_backward(StepState& st, int layer, int mb, BufferId dy, BufferId x, BufferId w, BufferId dw,
                        int64_t rows, int64_t out, int64_t in, const char* dx_name);
// The vocabulary-parallel classifier of 2D / 2.5D (Colossal-AI's VocabParallelClassifier2D, whose
// forward is Matmul_ABT_2D and backward Matmul_AB_2D + Matmul_ATB_2D). The table block is
// [vocab/q, h/q] of vocabulary block i, feature block j; yf [rows, h/q] of batch block i, feature
// block j; logits [rows, vocab/q] of batch block i, vocabulary block j.
//  forward  q steps: broadcast the table block of row k along the column group, GEMM yf T_k^T,
//           reduce the partial logits to column k along the row group;
//  dyf      q steps: broadcast dlogits of column k along the row group and the table block of row
//           k along the column group, GEMM accumulate dlogits_k T_k (Matmul_AB_2D);
//  dtable   q steps: broadcast dlogits of column k along the row group, GEMM dlogits_k^T yf,
//           reduce the partial table gradient to row k along the column group (Matmul_ATB_2D).
void summa_head_forward(StepState& st, int mb, BufferId yf, BufferId table, BufferId logits, int64_t rows,
                        int64_t vocab_part, int64_t hidden_part);
// Returns dyf [rows, h/q] and accumulates this rank's table block gradient into dtable.
BufferId summa_head_backward(StepState& st, int mb, BufferId dlogits, BufferId yf, BufferId table, BufferId dtable,
                             int64_t rows, int64_t vocab_part, int64_t hidden_part);

// tp2d_layer_emitter.cc
// The layer's body on a grid of blocks, shared by 2D and 3D: what differs is how the four linears
// run (which: 0 qkv, 1 attention output, 2 fc1, 3 fc2) and over which group (of how many feature
// blocks) the layer norms reduce their row statistics.
struct GridLayerOps {
  GroupId norm_group = kNoId;
  int64_t norm_parts = 1;
  void (*linear_fwd)(StepState& st, Phase ph, int layer, int mb, int which, BufferId x, BufferId w, BufferId y,
                     int64_t rows, int64_t out, int64_t in) = nullptr;
  BufferId (*linear_bwd)(StepState& st, int layer, int mb, int which, BufferId dy, BufferId x, BufferId w,
                         BufferId dw, int64_t rows, int64_t out, int64_t in, const char* dx_name) = nullptr;
};
void grid_layer_forward(StepState& st, const GridLayerOps& ops, int unit, LayerActs& a, Phase phase, BufferId* out);
BufferId grid_layer_backward(StepState& st, const GridLayerOps& ops, int unit, LayerActs& a, BufferId dout);
void split_norm_forward(StepState& st, const GridLayerOps& ops, Phase ph, int layer, int mb, BufferId x, BufferId w,
                        BufferId b, BufferId* y, BufferId* mean, BufferId* rstd, const char* y_name,
                        const char* mean_name, const char* rstd_name);
BufferId split_norm_backward(StepState& st, const GridLayerOps& ops, int layer, int mb, BufferId dy, BufferId x,
                             BufferId w, BufferId mean, BufferId rstd, BufferId dw, BufferId db);
// SUMMA's ops, the norms over the row group.
GridLayerOps tp2d_layer_ops(const StepState& st);

// tp2d_embedding_head.cc
// The two ends on a grid, shared by 2D and 3D: what differs is how the table is gathered and its
// gradient reduced back to the rank's block, over which group the final norm's statistics and
// the head's partial logits are reduced, and how the micro-batch's loss is summed over the other
// batch blocks.
struct GridEndOps {
  GroupId norm_group = kNoId;
  int64_t norm_parts = 1;
  BufferId (*gather_table)(StepState& st, BufferId shard, int mb, Phase ph) = nullptr;
  void (*reduce_table_grad)(StepState& st, BufferId full, BufferId grad, int mb) = nullptr;
  void (*reduce_loss)(StepState& st, BufferId loss, int mb) = nullptr;
  // The vocabulary-parallel head (grid_vocab_parallel): the rank's logits are rows x vocab_part,
  // its vocabulary block starting at vocab_offset; vocab_group holds the other vocabulary blocks of
  // the same rows (the loss's three all-reduces: max, sum of exponentials, target logit, as
  // Megatron's); logits_block is the rows' batch block when it is not the embedding's (3D: the
  // head's output axis), else -1; reduce_head_loss sums the micro-batch's loss over the other
  // batch blocks of the logits.
  bool vocab_parallel = false;
  GroupId vocab_group = kNoId;
  int64_t rows = 0, vocab_part = 0, vocab_offset = 0, logits_block = -1;
  void (*head_logits)(StepState& st, int mb, BufferId yf, BufferId table, BufferId logits) = nullptr;
  // Returns dyf and accumulates the table block's gradient into dtable.
  BufferId (*head_backward)(StepState& st, int mb, BufferId dlogits, BufferId yf, BufferId table,
                            BufferId dtable) = nullptr;
  void (*reduce_head_loss)(StepState& st, BufferId loss, int mb) = nullptr;
  // The vocabulary-parallel embedding (also when vocab_parallel: Colossal-AI's Embedding wrapper
  // takes VocabParallelEmbedding2D / 2p5D / 3D above the same limit). The rank looks the tokens of
  // embed_blocks batch blocks from embed_first_block up in its vocabulary rows [embed_offset,
  // embed_offset + embed_rows) (zero outside them) of the table embed_table returns (nullptr: the
  // rank's own block), and reduce-scatters the partial embeddings [embed_blocks * n, h/q] over
  // embed_group by batch block. Backward: dx all-gathered over embed_group, the rows' gradient
  // accumulated locally and handed to embed_table_grad (nullptr: accumulated into the block itself).
  int64_t embed_first_block = 0, embed_blocks = 1, embed_rows = 0, embed_offset = 0;
  GroupId embed_group = kNoId;
  BufferId (*embed_table)(StepState& st, BufferId shard, int mb, Phase ph) = nullptr;
  void (*embed_table_grad)(StepState& st, BufferId rows_grad, BufferId grad, int mb) = nullptr;
  GridLayerOps norm_ops() const {
    GridLayerOps o;
    o.norm_group = norm_group;
    o.norm_parts = norm_parts;
    return o;
  }
};
BufferId grid_embedding_forward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb);
void grid_embedding_backward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb, BufferId dx);
void grid_head_forward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb, BufferId x);
BufferId grid_head_backward(StepState& st, const GridEndOps& e, int unit, int chunk, int mb);
// The 2D table blocks, the norm and logits over the row group, the loss over the column (and depth) group.
GridEndOps tp2d_end_ops(const StepState& st);
// All-reduce over the column group of the gradients of the norms of bucket k's units; under 2.5D
// first the whole bucket's gradient over the depth group.
void tp2d_reduce_replicated_grads(StepState& st, int k);

}  // namespace tandem
