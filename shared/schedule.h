// The schedule IR: one training iteration of a parallel strategy, written once and read by every
// backend. A Schedule knows the world, the rank grid and the process groups; the program of each
// rank (its buffers and its ordered tasks on streams) is generated on demand, so that a 4096-rank
// schedule never sits whole in memory. Backends only give tasks a time (sim/) or run them (exec/);
// no scheduling decision is made outside shared/.
//
// Semantics every backend honours:
//  - Tasks of one stream run in program order; streams of a rank overlap.
//  - A task starts when the previous task of its stream and every task in `deps` have finished.
//  - Alloc gives zero-filled memory; a view (Buffer::view_of) allocates nothing and lives as long
//    as the buffer it views. A buffer may be allocated again after it was freed.
//  - A buffer allocated and never freed is persistent state (parameters, optimizer states): it is
//    allocated once and keeps its value from one iteration to the next. Backends initialise
//    parameters from the seed through their GlobalSlice (a shard through Buffer::shard_of), fp32
//    master copies from the parameters they update (the Adam task names both), the rest to zero.
//  - Members of a process group issue that group's collectives in the same order, on one stream.
//  - The n-th send from rank a to rank b matches the n-th receive at b from a (same bytes, tag).
#pragma once

#include <array>
#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "shared/inline_vector.h"
#include "shared/scenario.h"

namespace tandem {

using BufferId = uint32_t;
using TaskId = uint32_t;
using GroupId = uint32_t;
inline constexpr uint32_t kNoId = std::numeric_limits<uint32_t>::max();
// A task's lists (shared/inline_vector.h): up to two ids inside the Task, more on the heap. They
// read and convert as std::vector<TaskId> / std::vector<BufferId>.
using TaskIds = InlineVector<TaskId, 2>;
using BufferIds = InlineVector<BufferId, 2>;

// Pipeline messages travel on four streams, one per direction and kind, so that each stream sees
// its messages in the same order on both ends (the n-th send on a pair matches the n-th receive).
enum class Stream : uint8_t {
  kCompute,   // kernels
  kComm,      // collectives on the critical path: tensor and sequence parallelism, loss
  kGradComm,  // data-parallel gradient and ZeRO parameter collectives (overlap with compute)
  kSendFwd,   // pipeline: activations to the next stage
  kSendBwd,   // pipeline: gradients to the previous stage
  kRecvFwd,   // pipeline: activations from the previous stage
  kRecvBwd,   // pipeline: gradients from the next stage
  kH2D,       // host-to-device copies (offload)
  kD2H,       // device-to-host copies (offload)
  kHost,      // work on the host CPU (offloaded optimizer)
  kTpSend,    // tensor parallelism with comm/GEMM overlap: ring-exchange sends to the next tp rank
  kTpRecv,    //   and receives from the previous one (software.tp_comm_overlap)
};
inline constexpr int kStreamCount = 12;

// The four pipeline streams. Their Alloc and Free tasks stay out of the runtime's program-order
// memory walk (exec/runtime.cc): a receive buffer is allocated when the receive is posted, and a
// sent buffer freed when its send completes, i.e. once the peer has posted the matching receive;
// shared/pipeline_memory.h models when that is.
inline bool is_pipeline(Stream s) {
  return s == Stream::kSendFwd || s == Stream::kSendBwd || s == Stream::kRecvFwd || s == Stream::kRecvBwd;
}

enum class BufferRole : uint8_t { kParam, kGrad, kOptimizer, kActivation, kWorkspace, kComm };
inline constexpr int kBufferRoleCount = 6;
enum class Placement : uint8_t { kDevice, kHost, kNvme };

// Where a parameter buffer's values come from in the unsharded model: rows [row0, row0+rows) and
// columns [col0, col0+cols) of the global tensor `Buffer::name`, which is global_rows x global_cols.
// Every strategy initialises a tensor from the same seed through this, so runs compare exactly.
struct GlobalSlice {
  int64_t global_rows = 0, global_cols = 0;
  int64_t row0 = 0, col0 = 0;
  int64_t rows = 0, cols = 0;
};

struct Buffer {
  BufferId id = kNoId;
  std::string name;  // for parameters: the global tensor name ("layer3.attn.q.weight")
  int64_t bytes = 0;
  DType dtype = DType::kFp32;
  BufferRole role = BufferRole::kActivation;
  Placement placement = Placement::kDevice;
  BufferId view_of = kNoId;  // a view allocates nothing: it is bytes at view_offset_bytes of view_of
  int64_t view_offset_bytes = 0;
  bool has_slice = false;
  GlobalSlice slice;  // meaningful when has_slice
  // A ZeRO shard: this buffer holds bytes [shard_offset_bytes, +bytes) of the full buffer shard_of,
  // which is allocated only while gathered.
  BufferId shard_of = kNoId;
  int64_t shard_offset_bytes = 0;

  int64_t elements() const { return bytes / dtype_bytes(dtype); }
  bool is_view() const { return view_of != kNoId; }
};

enum class Phase : uint8_t { kForward, kBackward, kRecompute, kOptimizer };

// Each kernel's contract: dims (Compute::dims) and buffers, in order. Layouts are row-major;
// weights are [out_features, in_features] (Y = X W^T). n_tok = micro_batch * local sequence.
enum class Kernel : uint8_t {
  kData,               // dims {sample_begin, samples, seq (, chunks, chunk)} out {tokens, targets} int32
                       //   chunks > 1: the sequence is split in `chunks` equal parts and each sample
                       //   holds part `chunk` (and part chunks-1-chunk with kZigZag); seq = held length
  kEmbedding,          // dims {n_tok, hidden, rows, row_offset}      in {tokens, table} out {x}
  kEmbeddingBwd,       // same dims                                   in {tokens, dx} out {dtable}+=
  kLayerNorm,          // dims {rows, cols}      in {x, gamma, beta}  out {y, mean, rstd}
  kLayerNormBwd,       // dims {rows, cols}      in {dy, x, gamma, mean, rstd} out {dx, dgamma+=, dbeta+=}
  kRmsNorm,            // dims {rows, cols}      in {x, gamma}        out {y, rstd}
  kRmsNormBwd,         // dims {rows, cols}      in {dy, x, gamma, rstd} out {dx, dgamma+=}
  kGemm,               // dims {m, n, k[, streams]}, flags  in {A, B}  out {C}: C (+)= op(A) op(B);
                       // streams > 1: a cost hint, chunks issued round-robin on that many streams
  kAttention,          // dims {batch, seq, heads, kv_heads, head_dim} in {qkv}
                       //   out {ctx, lse} (+ {probs} unless flash) (+ {mask, dropped} with dropout)
  kAttentionBwd,       // same dims   in {qkv, ctx, dctx, lse (, probs...)} out {dqkv}
  kGelu,               // dims {n}               in {x}               out {y}
  kGeluBwd,            // dims {n}               in {x, dy}           out {dx}
  kSwiglu,             // dims {rows, f}         in {x [rows,2f]}     out {y [rows,f]}
  kSwigluBwd,          // dims {rows, f}         in {x, dy}           out {dx}
  kDropout,            // dims {n}               in {x}               out {y, mask}
  kDropoutBwd,         // dims {n}               in {dy, mask}        out {dx}
  kAdd,                // dims {n}               in {a, b}            out {c}
  kAccumulate,         // dims {n}               in {x}               out {y}: y += x
  kCrossEntropyMax,    // dims {n_tok, vocab_rows, vocab_offset} in {logits}  out {max}
  kCrossEntropySumExp, // same dims              in {logits, max}     out {sum_exp}
  kCrossEntropyTarget, // same dims              in {logits, targets} out {target_logit}
  kCrossEntropyLoss,   // same dims              in {max, sum_exp, target_logit} out {loss}+=
  kCrossEntropyBwd,    // same dims + {tokens_in_batch} in {logits, targets, max, sum_exp} out {dlogits}
                       //   cross-entropy dims[4] = 1: the framework runs these passes on an fp32
                       //   copy of the logits (cost only: Compute::bytes_moved; the math is the same)
  kAdam,               // dims {n, step, bytes_per_element} in {grad} out {master, m, v, param}
                       //   (bytes_per_element: the framework's whole step, for the cost only)
  // Layer norm of rows whose columns are split over a group (2D tensor parallelism: the hidden
  // dimension over the row group; shared/tp2d_layer_emitter.cc). The partial kernels divide by
  // full_cols, so that a sum all-reduce over the group gives the full-row statistic.
  kLayerNormPartialMean,     // dims {rows, cols, full_cols} in {x}       out {mean}: sum(x) / full_cols
  kLayerNormPartialVar,      // dims {rows, cols, full_cols} in {x, mean} out {var}: sum((x-mean)^2) / full_cols
  kLayerNormApply,           // dims {rows, cols} in {x, gamma, beta, mean, var} out {y, rstd}
  kLayerNormBwdPartialSums,  // dims {rows, cols, full_cols} in {dy, x, gamma, mean, rstd}
                             //   out {sums [rows, 2]}: sum(g) / full_cols, sum(g xhat) / full_cols, g = dy gamma
  kLayerNormBwdApply,        // dims {rows, cols} in {dy, x, gamma, mean, rstd, sums} out {dx, dgamma+=, dbeta+=}
  // Sequence parallelism (shared/ulysses.h): the layout changes around an all-to-all over the sp
  // group. cols = q_cols + 2 kv_cols (the Q, K, V segments; kv_cols 0 for the context), each
  // segment split in sp equal parts. Flag kToHeads: sequence-split -> head-split, else back.
  kAllToAllPack,       // dims {batch, s_local, sp, q_cols, kv_cols} in {x} out {blocks [sp][batch, s_local, cols/sp]}
                       //   kToHeads: x [batch, s_local, cols], block j = part j of each segment
                       //   else:     x [batch, sp*s_local, cols/sp], block j = sequence chunk j
  kAllToAllUnpack,     // same dims  in {blocks [sp][batch, s_local, cols/sp]} out {y}
                       //   kToHeads: y [batch, sp*s_local, cols/sp]; else y [batch, s_local, cols]
  // Ring attention (shared/ring_attention.h, kernels/cpu/ring_attention.h): one block of keys and
  // values per ring step over this rank's 2*chunk zig-zag tokens; mode 0 local (causal), 1 keys of
  // an earlier rank, 2 of a later one. K, V come from qkv for mode 0, else from kv [rows, 2 kv_cols].
  kRingAttention,      // dims {batch, chunk, heads, kv_heads, head_dim, mode} in {qkv (, kv)} out {ctx, lse}
                       //   merged into ctx, lse with kAccumulateOut, else written
  kRingAttentionBwd,   // same dims  in {qkv, ctx, dctx, lse (, kv)} out {dqkv, dkv fp32}: dq into dqkv's
                       //   Q columns, dK dV into dkv [rows, 2 kv_cols], both accumulated (+=)
  kKvPack,             // dims {rows, q_cols, kv_cols} in {qkv} out {kv}: the K and V columns
  kKvUnpack,           // same dims  in {dkv fp32} out {dqkv}: written into dqkv's K and V columns
  // Colossal-AI's ring self-attention (shared/ring_self_attention.h, kernels/cpu/ring_self_attention.h):
  // dims {batch, chunk, heads, head_dim, sp, block} (block: the key/value block's rank, or this
  // rank's own chunk); scores, probs and their gradients [batch, heads, chunk, sp*chunk].
  kRingSelfPack,       // in {qkv} out {k, v [rows, heads*head_dim]}
  kRingSelfScores,     // in {qkv, k block} out {scores}: the block's columns = Q K^T
  kRingSelfSoftmax,    // in {scores} out {probs}: causal scale-mask-softmax of the whole rows
  kRingSelfContext,    // in {probs, v block} out {ctx}: ctx (+)= probs[block] V (kAccumulateOut)
  kRingSelfGradV,      // in {probs, dctx} out {dv_full [batch*seq, heads*head_dim]} = probs^T dctx
  kRingSelfGradProbs,  // in {dctx, v block} out {dprobs}: the block's columns = dctx V^T
  kRingSelfSoftmaxBwd, // in {probs, dprobs} out {dscores}
  kRingSelfGradK,      // in {dscores, qkv} out {dk_full} = dscores^T Q
  kRingSelfGradQ,      // in {dscores, k block} out {dqkv}: Q columns (+)= dscores[block] K (kAccumulateOut)
  kRingSelfUnpack,     // in {dk_full, dv_full} out {dqkv}: this rank's rows into the K and V columns
  // A kernel known only by its cost, from an imported trace (traces/chakra/chakra_reader.h): no
  // operands, nothing a driver can run; only the simulator replays it.
  kOpaque,             // dims {time_ps, ops, bytes}: time_ps > 0 its measured or given time, else
                       //   priced from ops and bytes on the cluster (roofline); bytes_moved = bytes
};
inline constexpr int kKernelCount = 46;

// Compute flags.
inline constexpr uint8_t kTransA = 1, kTransB = 2, kAccumulateOut = 4, kCausal = 8;
// kToHeads: the all-to-all kernels' direction. kZigZag: kData loads sequence chunks c and
// chunks-1-c (ring attention's load-balanced causal split, shared/ring_attention.h).
inline constexpr uint8_t kToHeads = 16, kZigZag = 32;
// The framework runs this kernel and the next one of its stream as ONE fused kernel (Megatron's
// jit-fused bias-dropout-add: software.bias_dropout_fusion): the first's output stays on chip.
// Cost only (Compute::bytes_moved, the host dispatch counts one launch); the math is unchanged.
inline constexpr uint8_t kFusedIntoNext = 64, kFusedFromPrev = 128;

struct Compute {
  Kernel kernel = Kernel::kGemm;
  DType dtype = DType::kFp32;
  Phase phase = Phase::kForward;
  uint8_t flags = 0;
  int32_t layer = -1;       // model layer; -1 for embedding, head and optimizer work
  int32_t microbatch = -1;  // -1 when not tied to one
  std::array<int64_t, 6> dims{};
  BufferIds inputs;
  BufferIds outputs;

  // Tensor-core (matrix) flops: 2mnk for a GEMM, the QK^T and PV products for attention counted
  // over the full s x s square as in Narayanan et al. (SC21). Vector kernels count 0 here: their
  // cost is bytes_moved(). This is the "model flops" convention of MFU.
  double matmul_flops() const;
  // Bytes read and written from device memory, for the roofline.
  double bytes_moved() const;
  // dims without the entries that only say where (a data sample offset, a vocabulary shard's
  // first row): tasks with equal shape_dims do the same work. Calibration keys on it.
  std::array<int64_t, 6> shape_dims() const;
};

enum class CollectiveOp : uint8_t { kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kReduce };
enum class ReduceOp : uint8_t { kSum, kMax };

// bytes follows nccl-tests' "size": the whole buffer for all-reduce, broadcast, reduce and
// all-to-all; the gathered output for all-gather; the unscattered input for reduce-scatter.
// buffers: {in, out} (the same buffer twice for in-place).
struct Collective {
  CollectiveOp op = CollectiveOp::kAllReduce;
  ReduceOp reduce = ReduceOp::kSum;
  GroupId group = kNoId;
  int32_t root = -1;  // index within the group for broadcast and reduce
  int64_t bytes = 0;
  DType dtype = DType::kFp32;
  Phase phase = Phase::kForward;
  int32_t layer = -1;
  int32_t microbatch = -1;
  BufferIds buffers;
};

struct SendRecv {
  bool is_send = true;
  int32_t peer = -1;  // global rank
  int64_t bytes = 0;
  BufferId buffer = kNoId;
  int32_t tag = 0;
  int32_t microbatch = -1;
};

enum class CopyDirection : uint8_t { kH2D, kD2H, kD2D };
struct Copy {
  CopyDirection direction = CopyDirection::kD2H;
  int64_t bytes = 0;
  BufferId src = kNoId;
  BufferId dst = kNoId;
};

struct Alloc {
  BufferId buffer = kNoId;
};
struct Free {
  BufferId buffer = kNoId;
};

using TaskOp = std::variant<Compute, Collective, SendRecv, Copy, Alloc, Free>;

struct Task {
  TaskId id = kNoId;  // index in the rank's program; the same in every backend's trace
  Stream stream = Stream::kCompute;
  TaskIds deps;  // earlier tasks of this rank, on other streams or not
  TaskOp op;
};

// One rank's program for one iteration.
struct Program {
  int rank = -1;
  std::vector<Buffer> buffers;
  std::vector<Task> tasks;
};

enum class GroupKind : uint8_t { kTp, kPp, kDp, kSp, kEp, kEmbedding };
inline constexpr int kGroupKindCount = 6;

struct ProcessGroup {
  GroupId id = kNoId;
  GroupKind kind = GroupKind::kTp;
  uint8_t axis = 0;  // sub-axis of multi-dimensional tensor parallelism (row, column, depth ...)
  std::vector<int> ranks;  // global ranks in group order
};

const char* to_string(Stream s);
const char* to_string(BufferRole r);
const char* to_string(Phase p);
const char* to_string(Kernel k);
const char* to_string(CollectiveOp op);
const char* to_string(GroupKind k);

class RankGrid;

// What produces rank programs: the strategy generators (shared/step_generator.h), or a test's
// hand-written programs.
class ProgramGenerator {
 public:
  virtual ~ProgramGenerator() = default;
  virtual Program generate(int rank) const = 0;
};

// Ranks whose programs are identical but for group ids and peers (data-parallel replicas, the
// tensor-parallel ranks of a stage): generate one, count it `count` times.
struct RankClass {
  int representative = 0;
  int count = 0;
};

class Schedule {
 public:
  // Builds the groups and the generator for a checked scenario. Throws Error if the strategy asks
  // for something no generator provides yet.
  explicit Schedule(Scenario scenario);
  // A schedule of hand-written programs (tests, custom workloads): `groups` ids must equal their
  // index; every rank's program comes from `generator`. The grid is dp = world size.
  Schedule(Scenario scenario, int world_size, std::vector<ProcessGroup> groups,
           std::unique_ptr<ProgramGenerator> generator);
  ~Schedule();
  Schedule(Schedule&&) noexcept;
  Schedule& operator=(Schedule&&) noexcept;

  const Scenario& scenario() const { return scenario_; }
  int world_size() const;
  const RankGrid& grid() const { return *grid_; }
  const std::vector<ProcessGroup>& groups() const { return groups_; }
  const ProcessGroup& group(GroupId id) const { return groups_.at(id); }
  // The group of `kind` (and sub-axis) that `rank` belongs to (kNoId if none).
  GroupId group_of(int rank, GroupKind kind, int axis = 0) const;
  // GPU index of a rank (rank r runs on GPU r: node r / gpus_per_node).
  int device_of(int rank) const { return rank; }
  // Generates the program of one rank.
  Program program(int rank) const;
  // A partition of all ranks into classes of identical programs.
  std::vector<RankClass> rank_classes() const;
  // The representative of the class `rank` is in (rank itself for hand-written schedules).
  int representative_of(int rank) const;
  // Translate what the representative's program names into `rank`'s terms: a peer rank, and a
  // group id (the group of the same kind and axis that `rank` is in).
  int peer_for(int rank, int peer_of_representative) const;
  GroupId group_for(int rank, GroupId group_of_representative) const;

 private:
  void index_groups();

  Scenario scenario_;
  std::unique_ptr<RankGrid> grid_;
  std::vector<ProcessGroup> groups_;
  std::vector<std::vector<GroupId>> rank_groups_;  // per rank, the groups it is in
  std::unique_ptr<ProgramGenerator> generator_;
  bool generated_ = false;  // programs come from the strategy generators (symmetries known)
};

}  // namespace tandem
