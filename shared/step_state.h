// The working state of one rank's program while the step generator writes it: the dimensions
// every kernel needs, the parameter and gradient views, the activations saved per micro-batch.
// Private to the generator files (step_generator.cc, layer_emitter.cc, embedding_head_emitter.cc,
// grad_sync.cc, tp_overlap.cc).
#pragma once

#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "shared/param_layout.h"
#include "shared/process_groups.h"
#include "shared/program_builder.h"
#include "shared/rank_grid.h"

namespace tandem {

struct AutoOperatorPlan;  // shared/auto_placement.h
struct AutoRecord;

// Local sizes of one micro-batch on this rank.
struct StepDims {
  int64_t n = 0;        // tokens of a micro-batch: micro_batch * seq
  int64_t n_local = 0;  // tokens this rank keeps between blocks (n / tp with Megatron-SP)
  int64_t hidden = 0;
  int64_t heads = 0, kv_heads = 0, head_dim = 0;  // local heads
  int64_t qkv_out = 0;  // (heads + 2 kv_heads) * head_dim
  int64_t ffn = 0;      // local ffn width
  int64_t ffn_in = 0;   // fc1 output width: ffn, or 2 ffn for SwiGLU
  int64_t vocab = 0, vocab_offset = 0;  // local vocabulary rows and their first global row
  int64_t batch = 0, seq = 0;
  DType dtype = DType::kFp32;  // activations, parameters, gradients: bf16 under strategy.dtype fp8
  bool fp8 = false;            // strategy.dtype fp8: the layers' GEMMs in FP8 (shared/fp8_recipe.h)
  int tp = 1;
  bool seq_parallel = false;  // Megatron-SP over the tensor group
  bool tp_overlap = false;    // its gathers and reductions as ring exchanges under the GEMMs
  bool dropout = false;
  bool flash = false;
  // tp_mode 2d (shared/tp2d_groups.h): the grid side q (1 otherwise) and this rank's row and column.
  // n, batch are then the rank's batch block (micro_batch / q samples), hidden, heads, ffn the
  // feature block (/ q); vocab the whole vocabulary (the head splits it itself, shared/tp2d.h).
  int tp2d_q = 1, tp2d_i = 0, tp2d_j = 0;
  int tp2d_d = 1, tp2d_k = 0;  // tp_mode 2.5d: depth and depth layer (the batch is split d*q ways)
  // tp_mode 3d (shared/tp3d_groups.h): the cube side q (1 otherwise) and this rank's coordinates.
  // n, batch are the rank's batch block (micro_batch / q^2 samples), hidden, heads, ffn the
  // feature block (/ q), vocab the whole vocabulary, as under 2D.
  int tp3d_q = 1, tp3d_a = 0, tp3d_b = 0, tp3d_c = 0;

  // The element type of a GEMM of `layer` (-1: embedding or head): under fp8 a layer's forward
  // GEMMs take e4m3 operands and its backward GEMMs an e5m2 gradient (the hybrid recipe); the
  // head's GEMMs stay in dtype.
  DType gemm_dtype(int layer, bool backward) const {
    if (!fp8 || layer < 0) return dtype;
    return backward ? DType::kFp8E5M2 : DType::kFp8E4M3;
  }

  // Sequence parallelism over the sp axis (sp_mode ulysses or ring_attention): n, n_local and seq
  // are this rank's share of the sequence; the data task loads chunk seq_chunk of seq_chunks
  // (and chunk seq_chunks-1-seq_chunk with zigzag). The attention kernels see att_seq tokens and
  // att_heads (att_kv_heads) heads: with Ulysses the whole sequence and heads/sp.
  int sp = 1;
  bool ulysses = false;
  bool ring_attention = false;
  bool ring_self = false;  // sp_mode ring: Colossal-AI's ring self-attention, contiguous chunks
  bool zigzag = false;
  int64_t seq_chunks = 0, seq_chunk = 0;
  int64_t att_seq = 0, att_heads = 0, att_kv_heads = 0;
};

// Parameter (or gradient) views of one unit. kNoId where the unit has no such tensor.
struct UnitViews {
  BufferId ln1_w = kNoId, ln1_b = kNoId, ln2_w = kNoId, ln2_b = kNoId;
  BufferId qkv = kNoId, o = kNoId, fc1 = kNoId, fc2 = kNoId;
  BufferId table = kNoId;            // embedding table, or the head's weight
  BufferId norm = kNoId;             // the leading norm region (Megatron-SP all-reduces it)
};

// What a layer's forward keeps for its backward (kNoId where not kept).
struct LayerActs {
  int layer = -1, mb = -1;
  BufferId x = kNoId, mean1 = kNoId, rstd1 = kNoId, y1 = kNoId, qkv = kNoId, ctx = kNoId, lse = kNoId;
  BufferId probs = kNoId, amask = kNoId, adrop = kNoId, omask = kNoId;
  BufferId x2 = kNoId, mean2 = kNoId, rstd2 = kNoId, y2 = kNoId, h1 = kNoId, a1 = kNoId, hmask = kNoId;
  BufferId ctx_seq = kNoId;  // Ulysses: the context back on the sequence split (the o projection's input)
};

struct HeadActs {
  BufferId x = kNoId, yf = kNoId, mean = kNoId, rstd = kNoId, logits = kNoId, max = kNoId, sum = kNoId;
  BufferId targets = kNoId;
  BufferId logits_fp32 = kNoId;  // the framework's fp32 copy (software.cross_entropy_fp32), memory only
};

struct BucketBuffers {
  BufferId param = kNoId;        // the whole bucket (persistent, or gathered under ZeRO-3)
  BufferId param_shard = kNoId;  // this rank's shard (a view, or a buffer under ZeRO-3)
  BufferId grad = kNoId;         // the whole bucket's gradient (per micro-batch under ZeRO-2/3)
  BufferId grad_shard = kNoId;   // reduced shard (a view under ZeRO-1, a buffer under ZeRO-2/3)
  BufferId master = kNoId, m = kNoId, v = kNoId;  // optimizer states (shards under ZeRO >= 1)
  bool gathered = false;         // ZeRO-3: the whole bucket is allocated now
  bool grad_live = false;        // ZeRO-2/3: the per-micro-batch gradient is allocated now
  // offload params, a chunk on the host: the host buffer it is gathered from (its shard under
  // ZeRO-3, the whole chunk without data parallelism) and the device copy of the shard.
  BufferId host_param = kNoId, staging = kNoId;
  // offload auto, a chunk on the host: its device copy (staging with data parallelism, else
  // param) is allocated now (shared/auto_eviction.cc).
  bool resident = false;
};

// One rank's program while the step generator writes it. The public constants say what the
// program is for; the program itself and the state that must stay consistent with it (the model
// state's views, what each forward keeps for its backward) are reached through methods, which
// check that every kept thing is taken back once, in the order the pipeline needs.
class StepState {
 public:
  // chunks: offload auto's placement of the Gemini chunks (shared/auto_placement.h).
  StepState(const Scenario& scenario, const RankGrid& grid, int rank, const ChunkPlacement* chunks = nullptr);

  const Scenario& scenario;
  const RankGrid& grid;
  const int rank;
  const RankCoord coord;
  const GroupIds groups;
  const int micro_batches;  // per pipeline and iteration
  const StepDims dims;
  const ParamLayout layout;
  ProgramBuilder program;   // the program being written
  // The compute streams the framework spreads the GEMMs now being written over (1: the compute
  // stream alone). tp_overlap.cc sets it around its chunk GEMMs (Transformer Engine issues them
  // round-robin on min(3, tp) streams); linear_fwd and linear_dgrad write it into the GEMM's
  // dims[3] when above 1, a cost hint: the chunks in flight share the SMs (sim/compute_cost_model.cc).
  int gemm_streams = 1;
  // offload auto: the device buffers of the chunks whose reduced gradient shard is on its way to
  // the host (the copy in flight on the d2h stream), oldest first (grads_to_host,
  // shared/grad_sync.cc). They are freed on the compute stream just before the gradient two
  // chunks later is allocated, so at most two chunks' gradients are on the device and the
  // program-order walk counts both (shared/memory_order.h).
  std::vector<std::vector<BufferId>> grads_in_flight;
  // offload params/auto under ZeRO-3: the device copy of the last host chunk's shard gathered,
  // freed before the next one is allocated (gather_host_chunk, shared/offload_emitter.cc).
  BufferId staging_in_use = kNoId;
  // offload auto: the per-operator eviction's inputs (null: none, as in the warm-up) and what the
  // generator records (null: not offload auto) (shared/auto_placement.h, auto_eviction.cc).
  const AutoOperatorPlan* auto_plan = nullptr;
  AutoRecord* auto_record = nullptr;

  GroupId tp_group() const { return groups.tp(coord); }
  GroupId sp_group() const { return groups.sp(coord); }
  // Whether this rank runs the last virtual stage's head (and so computes the loss).
  bool holds_head() const { return layout.units.back().kind == ParamUnit::Kind::kHead; }
  // The parameter units of model chunk `chunk`, in forward order.
  std::vector<int> chunk_units(int chunk) const;
  // The rank `delta` pipeline stages (or tensor ranks) away, around the ring.
  int pipeline_peer(int delta) const;
  int tensor_peer(int delta) const;

  // "L<layer>.m<mb>.<what>" (a part left out when -1).
  std::string buffer_name(const char* what, int layer, int mb) const;
  // A new activation-like buffer of `elements` elements, allocated now on stream `s`.
  BufferId allocate(const char* what, int layer, int mb, int64_t elements, DType dtype,
                    BufferRole role = BufferRole::kActivation, Stream s = Stream::kCompute);
  // Frees `id` on stream `s` (nothing for kNoId).
  void release(BufferId id, Stream s = Stream::kCompute) {
    if (id != kNoId) program.free(id, s);
  }
  TaskId kernel(Kernel k, Phase phase, int layer, int mb, std::array<int64_t, 6> dims,
                std::vector<BufferId> in, std::vector<BufferId> out, uint8_t flags = 0,
                DType dtype = DType::kFp32);
  // Collective over the tensor group (skipped when tp == 1). bytes per the IR's convention.
  void tp_collective(CollectiveOp op, BufferId in, BufferId out, int64_t bytes, Phase phase, int layer, int mb,
                     ReduceOp reduce = ReduceOp::kSum, DType dtype = DType::kFp32,
                     std::initializer_list<TaskId> extra = {});
  // Y[n, out] = X W^T, dX = dY W, dW += dY^T X (weights stored [out, in]).
  void linear_fwd(Phase ph, int layer, int mb, BufferId x, BufferId w, BufferId y, int64_t rows, int64_t out, int64_t in);
  void linear_dgrad(int layer, int mb, BufferId dy, BufferId w, BufferId dx, int64_t rows, int64_t out, int64_t in);
  void linear_wgrad(int layer, int mb, BufferId dy, BufferId x, BufferId dw, int64_t rows, int64_t out, int64_t in);
  // Megatron-SP: gather a sequence shard [n_local, h] to [n, h] (a comm buffer the caller frees).
  BufferId gather_seq(BufferId shard, int layer, int mb, Phase ph, const char* what);
  // Reduce a partial [n, h] over the tensor group: all-reduce in place, or reduce-scatter to a new
  // [n_local, h] shard (freeing the partial, unless keep_partial: then the caller frees it after
  // the work it runs under the reduce-scatter). Returns the reduced buffer.
  BufferId reduce_partial(BufferId partial, int layer, int mb, Phase ph, const char* what, bool keep_partial = false);
  // Megatron-LM's column-parallel backward (LinearWithGradAccumulationAndAsyncCommunication) for
  // Y [n, out] = gather(x) W^T: the input's all-gather runs under the dgrad GEMM, the dgrad's
  // reduction under the wgrad GEMM. Returns dx, reduced (a sequence shard under Megatron-SP),
  // named `dx_name`, `dx_shard_name` after the reduce-scatter; `gathered` names the gathered x.
  BufferId column_parallel_backward(int layer, int mb, BufferId dy, BufferId x, BufferId w, BufferId dw, int64_t out,
                                    const char* gathered, const char* dx_name, const char* dx_shard_name);
  // Layer norm or RMS norm (model.norm) over [n_local, h]: *y, *mean (layer norm only), *rstd.
  void norm_forward(Phase ph, int layer, int mb, BufferId x, BufferId w, BufferId bias, BufferId* y,
                    BufferId* mean, BufferId* rstd, const char* y_name, const char* mean_name,
                    const char* rstd_name);
  // Its backward: returns a new dx [n_local, h]; accumulates dw (and db for layer norm).
  BufferId norm_backward(int layer, int mb, BufferId dy, BufferId x, BufferId w, BufferId mean, BufferId rstd,
                         BufferId dw, BufferId db);

  // Views of each unit's parameters and gradients, and the gradient buckets' buffers, set once by
  // emit_persistent_state.
  void set_unit_views(int unit, const UnitViews& params, const UnitViews& grads);
  const UnitViews& params(int unit) const { return param_views_.at(unit); }
  const UnitViews& grads(int unit) const { return grad_views_.at(unit); }
  void add_bucket(const BucketBuffers& buffers) { buckets_.push_back(buffers); }
  BucketBuffers& bucket(int k) { return buckets_.at(k); }
  int bucket_count() const { return static_cast<int>(buckets_.size()); }
  // The loss buffer (kNoId unless this rank holds the head).
  void allocate_loss();
  BufferId loss() const { return loss_; }

  // What a forward keeps for its backward. Each is taken back exactly once; a layer's
  // activations come back in reverse order (the backward runs the chunk's layers backwards).
  void keep_layer(int chunk, const LayerActs& acts);
  LayerActs take_layer(int chunk, int mb);
  void keep_head(int chunk, int mb, const HeadActs& acts);
  HeadActs take_head(int chunk, int mb);
  void keep_tokens(int chunk, int mb, BufferId tokens);  // for the embedding's backward
  BufferId take_tokens(int chunk, int mb);
  // With one pipeline stage the head uses the targets loaded with the tokens.
  void keep_targets(int mb, BufferId targets);
  BufferId take_targets(int mb);  // kNoId when none were kept

 private:
  std::vector<UnitViews> param_views_, grad_views_;  // per unit
  std::vector<BucketBuffers> buckets_;
  BufferId loss_ = kNoId;
  std::map<std::pair<int, int>, std::vector<LayerActs>> layers_;  // (chunk, mb) -> per layer
  std::map<std::pair<int, int>, HeadActs> heads_;
  std::map<std::pair<int, int>, BufferId> tokens_;  // (chunk, mb) on the first virtual stage
  std::map<int, BufferId> targets_;                 // mb -> targets loaded with the tokens (pp == 1)
};

// tp_overlap.cc (software.tp_comm_overlap). A BlockGemm multiplies `rows` rows of `in` into `out`.
using BlockGemm = std::function<void(BufferId in, BufferId out, int64_t rows)>;
// Gathers the sequence shard over the tensor ring while gemm() runs on each block as it arrives,
// writing the matching row block of `out` (rows of out_cols elements). Returns the gathered
// [n, h] buffer (a comm buffer the caller frees).
BufferId gather_gemm_overlapped(StepState& st, BufferId shard, int layer, int mb, const char* what,
                                BufferId out, int64_t out_cols, const BlockGemm& gemm);
// Runs gemm() on the row blocks of `in` (rows of in_cols elements) into [n_local, h] partials
// reduced around the tensor ring; returns this rank's reduced sequence shard.
BufferId gemm_reduce_scatter_overlapped(StepState& st, BufferId in, int64_t in_cols, int layer, int mb, Phase ph,
                                        const char* what, const BlockGemm& gemm);

// layer_emitter.cc
void emit_layer_forward(StepState& st, int unit, LayerActs& a, Phase phase, BufferId* out);
BufferId emit_layer_backward(StepState& st, int unit, LayerActs& a, BufferId dout);
// Its pieces that do not depend on how the linears are split (shared with tp2d_layer_emitter.cc):
// whether the attention core (probabilities) is kept, the core itself, and the residual
// out [n_local, h] = dropout(branch) + res (branch freed, *mask kept with dropout).
bool keeps_core(const StepState& st);
void attention_fwd(StepState& st, Phase ph, LayerActs& a, bool keep_probs);
void release_core(StepState& st, LayerActs& a);
BufferId residual(StepState& st, Phase ph, int l, int mb, BufferId branch, BufferId res, BufferId* mask,
                  const char* maskname, const char* outname);
// The MLP's activation a.a1 [n, ffn] = act(a.h1) (GELU, or SwiGLU of h1's two halves), and its
// backward: returns dh1 [n, ffn_in] from da1 (frees da1 and a.h1).
void activation_fwd(StepState& st, Phase ph, LayerActs& a);
BufferId activation_bwd(StepState& st, LayerActs& a, BufferId da1);
// A residual branch's dropout backward on n elements: returns dy through *mask (freed, a new buffer
// named `name`), or dy itself without dropout.
BufferId dropout_bwd(StepState& st, int l, int mb, BufferId dy, BufferId* mask, int64_t n, const char* name);
// embedding_head_emitter.cc: embedding (first virtual stage) and head + loss (last virtual stage).
// load_batch: a micro-batch's {tokens, targets} as this rank takes them; tokens_per_iteration:
// the loss's divisor.
std::pair<BufferId, BufferId> load_batch(StepState& st, int mb);
// The same of another batch block of the micro-batch (of the blocks the grid splits it into).
std::pair<BufferId, BufferId> load_batch(StepState& st, int mb, int64_t block);
// The same of `blocks` consecutive batch blocks from `block` (a grid's vocabulary-parallel
// embedding looks up the tokens of its group's blocks).
std::pair<BufferId, BufferId> load_batch(StepState& st, int mb, int64_t block, int64_t blocks);
int64_t tokens_per_iteration(const StepState& st);
// The head's start: its input x and the micro-batch's targets (kept by the embedding on a single
// stage, loaded otherwise).
HeadActs head_acts(StepState& st, int mb, BufferId x);
// The cross-entropy on h.logits (kernel dims xd): row max, sum of exponentials, target logit (each
// all-reduced over the tensor group when vocab_parallel: Megatron's three all-reduces), then the
// loss: added into st.loss() when vocab_parallel (returns kNoId), otherwise written to a new
// one-float buffer "xent_loss" that is returned for the caller to reduce. Its backward returns
// dlogits and frees the logits, targets and row statistics.
BufferId cross_entropy_fwd(StepState& st, int mb, const std::array<int64_t, 6>& xd, HeadActs& h, bool vocab_parallel);
// The same with the three all-reduces over `vocab_group` (a grid's group holding the other
// vocabulary blocks of the same rows); the loss written to a new buffer (returned).
BufferId cross_entropy_fwd(StepState& st, int mb, const std::array<int64_t, 6>& xd, HeadActs& h, GroupId vocab_group);
BufferId cross_entropy_bwd(StepState& st, int mb, const std::array<int64_t, 6>& xd, const HeadActs& h);
BufferId emit_embedding_forward(StepState& st, int unit, int chunk, int mb);
void emit_embedding_backward(StepState& st, int unit, int chunk, int mb, BufferId dx);
void emit_head_forward(StepState& st, int unit, int chunk, int mb, BufferId x);
BufferId emit_head_backward(StepState& st, int unit, int chunk, int mb);
// grad_sync.cc: persistent state, ZeRO gathers, gradient reduction, optimizer.
void emit_persistent_state(StepState& st);
void emit_param_gathers(StepState& st);  // software.overlap_param_gather
void ensure_params(StepState& st, int unit, bool forward);
void release_params_after(StepState& st, int unit, bool forward);
void ensure_grads(StepState& st, int unit);
void after_unit_backward(StepState& st, int unit, int mb);
void emit_optimizer(StepState& st);
// offload_emitter.cc: a chunk on the host (offload params): its gather to the device before a
// pass (allocations after `throttle`), and its optimizer step on the host over its gradient
// shard on the host (`downloaded`: a copy the step frees), after task `wait`.
void gather_host_chunk(StepState& st, int k, TaskId throttle);
void host_chunk_step(StepState& st, int k, BufferId hgrad, bool downloaded, int64_t n, TaskId wait);
void free_host_chunk_staging(StepState& st);
// offload auto (shared/auto_eviction.cc): Gemini's adjust_layout before an operator that needs
// buckets `needed` (unit -1: the optimizer step); and, before the optimizer step, the device
// copies of the chunks that live on the host dropped (the host Adam writes their host shard).
void adjust_layout(StepState& st, int unit, bool forward, const std::vector<int>& needed);
void drop_resident_host_chunks(StepState& st);  // the last host chunk shard copy gathered, if any
// fp8_state.cc: strategy.dtype fp8, the FP8 weight copies and the scaling state of every layer.
void emit_fp8_state(StepState& st);
// The amax reduction at the end of a chunk's forward (forward) or backward of micro-batch mb.
void emit_amax_reduction(StepState& st, bool forward, int mb);

}  // namespace tandem
