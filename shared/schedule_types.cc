// Names and cost figures of the schedule IR's enums and tasks.
#include "shared/schedule.h"

namespace tandem {

const char* to_string(Stream s) {
  switch (s) {
    case Stream::kCompute: return "compute";
    case Stream::kComm: return "comm";
    case Stream::kGradComm: return "grad-comm";
    case Stream::kSendFwd: return "send-fwd";
    case Stream::kSendBwd: return "send-bwd";
    case Stream::kRecvFwd: return "recv-fwd";
    case Stream::kRecvBwd: return "recv-bwd";
    case Stream::kH2D: return "h2d";
    case Stream::kD2H: return "d2h";
    case Stream::kHost: return "host";
    case Stream::kTpSend: return "tp-send";
    case Stream::kTpRecv: return "tp-recv";
  }
  return "?";
}

const char* to_string(BufferRole r) {
  switch (r) {
    case BufferRole::kParam: return "params";
    case BufferRole::kGrad: return "grads";
    case BufferRole::kOptimizer: return "optimizer";
    case BufferRole::kActivation: return "activations";
    case BufferRole::kWorkspace: return "workspace";
    case BufferRole::kComm: return "comm";
  }
  return "?";
}

const char* to_string(Phase p) {
  switch (p) {
    case Phase::kForward: return "forward";
    case Phase::kBackward: return "backward";
    case Phase::kRecompute: return "recompute";
    case Phase::kOptimizer: return "optimizer";
  }
  return "?";
}

const char* to_string(Kernel k) {
  switch (k) {
    case Kernel::kData: return "data";
    case Kernel::kEmbedding: return "embedding";
    case Kernel::kEmbeddingBwd: return "embedding-bwd";
    case Kernel::kLayerNorm: return "layernorm";
    case Kernel::kLayerNormBwd: return "layernorm-bwd";
    case Kernel::kRmsNorm: return "rmsnorm";
    case Kernel::kRmsNormBwd: return "rmsnorm-bwd";
    case Kernel::kGemm: return "gemm";
    case Kernel::kAttention: return "attention";
    case Kernel::kAttentionBwd: return "attention-bwd";
    case Kernel::kGelu: return "gelu";
    case Kernel::kGeluBwd: return "gelu-bwd";
    case Kernel::kSwiglu: return "swiglu";
    case Kernel::kSwigluBwd: return "swiglu-bwd";
    case Kernel::kDropout: return "dropout";
    case Kernel::kDropoutBwd: return "dropout-bwd";
    case Kernel::kAdd: return "add";
    case Kernel::kAccumulate: return "accumulate";
    case Kernel::kCrossEntropyMax: return "xent-max";
    case Kernel::kCrossEntropySumExp: return "xent-sumexp";
    case Kernel::kCrossEntropyTarget: return "xent-target";
    case Kernel::kCrossEntropyLoss: return "xent-loss";
    case Kernel::kCrossEntropyBwd: return "xent-bwd";
    case Kernel::kAdam: return "adam";
    case Kernel::kLayerNormPartialMean: return "layernorm-partial-mean";
    case Kernel::kLayerNormPartialVar: return "layernorm-partial-var";
    case Kernel::kLayerNormApply: return "layernorm-apply";
    case Kernel::kLayerNormBwdPartialSums: return "layernorm-bwd-partial-sums";
    case Kernel::kLayerNormBwdApply: return "layernorm-bwd-apply";
    case Kernel::kAllToAllPack: return "a2a-pack";
    case Kernel::kAllToAllUnpack: return "a2a-unpack";
    case Kernel::kRingAttention: return "ring-attention";
    case Kernel::kRingAttentionBwd: return "ring-attention-bwd";
    case Kernel::kKvPack: return "kv-pack";
    case Kernel::kKvUnpack: return "kv-unpack";
    case Kernel::kRingSelfPack: return "ring-self-pack";
    case Kernel::kRingSelfScores: return "ring-self-scores";
    case Kernel::kRingSelfSoftmax: return "ring-self-softmax";
    case Kernel::kRingSelfContext: return "ring-self-context";
    case Kernel::kRingSelfGradV: return "ring-self-grad-v";
    case Kernel::kRingSelfGradProbs: return "ring-self-grad-probs";
    case Kernel::kRingSelfSoftmaxBwd: return "ring-self-softmax-bwd";
    case Kernel::kRingSelfGradK: return "ring-self-grad-k";
    case Kernel::kRingSelfGradQ: return "ring-self-grad-q";
    case Kernel::kRingSelfUnpack: return "ring-self-unpack";
    case Kernel::kOpaque: return "opaque";
  }
  return "?";
}

const char* to_string(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all-reduce";
    case CollectiveOp::kAllGather: return "all-gather";
    case CollectiveOp::kReduceScatter: return "reduce-scatter";
    case CollectiveOp::kAllToAll: return "all-to-all";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kReduce: return "reduce";
  }
  return "?";
}

const char* to_string(GroupKind k) {
  switch (k) {
    case GroupKind::kTp: return "tp";
    case GroupKind::kPp: return "pp";
    case GroupKind::kDp: return "dp";
    case GroupKind::kSp: return "sp";
    case GroupKind::kEp: return "ep";
    case GroupKind::kEmbedding: return "embedding";
  }
  return "?";
}

double Compute::matmul_flops() const {
  const auto& d = dims;
  switch (kernel) {
    case Kernel::kGemm:
      return 2.0 * double(d[0]) * double(d[1]) * double(d[2]);
    case Kernel::kAttention:  // QK^T and PV: 2 * (2 * s * s * head_dim) per head and sequence
      return 4.0 * double(d[0]) * double(d[1]) * double(d[1]) * double(d[2]) * double(d[4]);
    case Kernel::kAttentionBwd:  // dQ, dK, dV, dP: twice the forward
      return 8.0 * double(d[0]) * double(d[1]) * double(d[1]) * double(d[2]) * double(d[4]);
    case Kernel::kRingAttention:  // the whole (2 chunk)^2 square per step, as for kAttention: sp steps
                                  // on each of sp ranks make the s x s square of the whole sequence
      return 4.0 * double(d[0]) * 4.0 * double(d[1]) * double(d[1]) * double(d[2]) * double(d[4]);
    case Kernel::kRingAttentionBwd:
      return 8.0 * double(d[0]) * 4.0 * double(d[1]) * double(d[1]) * double(d[2]) * double(d[4]);
    // Ring self-attention: one block (chunk x chunk per head) per ring step, the whole row (chunk x
    // sp*chunk) for dV and dK; sp steps of each on each of sp ranks make the s x s square.
    case Kernel::kRingSelfScores:
    case Kernel::kRingSelfContext:
    case Kernel::kRingSelfGradProbs:
    case Kernel::kRingSelfGradQ:
      return 2.0 * double(d[0]) * double(d[2]) * double(d[1]) * double(d[1]) * double(d[3]);
    case Kernel::kRingSelfGradV:
    case Kernel::kRingSelfGradK:
      return 2.0 * double(d[0]) * double(d[2]) * double(d[1]) * double(d[1]) * double(d[4]) * double(d[3]);
    default:
      return 0.0;
  }
}

std::array<int64_t, 6> Compute::shape_dims() const {
  std::array<int64_t, 6> d = dims;
  switch (kernel) {
    case Kernel::kData: d[0] = 0, d[4] = 0; break;
    case Kernel::kEmbedding:
    case Kernel::kEmbeddingBwd: d[3] = 0; break;
    case Kernel::kCrossEntropyMax:
    case Kernel::kCrossEntropySumExp:
    case Kernel::kCrossEntropyTarget:
    case Kernel::kCrossEntropyLoss:
    case Kernel::kCrossEntropyBwd: d[2] = 0; break;
    default: break;
  }
  return d;
}

namespace {

// Bytes of a cross-entropy kernel over `cells` logits of `rows` tokens, element size e.
// Training dtype: max, sum-exp and target read the logits once; backward reads them and writes
// the gradient; the loss reads and writes a few floats a token.
// fp32 (Megatron's vocab-parallel cross entropy on logits.float(): megatron/core/tensor_parallel/
// cross_entropy.py at core_v0.8.0, mpu/cross_entropy.py in Megatron-LM v2-v3), bytes a logit:
//   max:     the cast (read e, write 4) and torch.max (read 4)                  e + 8
//   sum-exp: in-place subtract of the max (read 4, write 4), in-place exp (4 + 4),
//            sum (read 4)                                                        20
//   target:  a gather of one logit a token: index, logit, mask, result, 16 bytes a token
//   loss:    exp_logits.div_(sum_exp) in place, the softmax kept for backward    8
//   bwd:     grad_input.mul_(grad_output) in place (4 + 4), the cast's backward
//            to the training dtype (read 4, write e)                             12 + e
// 38 bytes a logit forward and 14 backward for bf16, against 6 and 4 in the training dtype.
double cross_entropy_bytes(Kernel k, double e, double rows, double cells, bool fp32) {
  switch (k) {
    case Kernel::kCrossEntropyMax: return fp32 ? (e + 8.0) * cells : e * cells;
    case Kernel::kCrossEntropySumExp: return fp32 ? 20.0 * cells : e * cells;
    case Kernel::kCrossEntropyTarget: return fp32 ? 16.0 * rows : e * cells;
    case Kernel::kCrossEntropyLoss: return 16.0 * rows + (fp32 ? 8.0 * cells : 0.0);
    default: return fp32 ? (12.0 + e) * cells : 2.0 * e * cells;
  }
}

}  // namespace

// Ring self-attention (dims {b, c, heads, head_dim, sp, block}): the rows of Q, K, V and the
// context are b*c x h (h = heads*head_dim); a score block b*heads*c*c, a score row b*heads*c*s.
static double ring_self_bytes(Kernel k, double e, const std::array<int64_t, 6>& d) {
  const double rows = double(d[0]) * double(d[1]), h = double(d[2]) * double(d[3]);
  const double block = double(d[0]) * double(d[2]) * double(d[1]) * double(d[1]), row = block * double(d[4]);
  const double full = rows * double(d[4]) * h;  // b*s*h
  switch (k) {
    case Kernel::kRingSelfPack:
    case Kernel::kRingSelfUnpack: return 4.0 * e * rows * h;   // two column blocks read and written
    case Kernel::kRingSelfScores:
    case Kernel::kRingSelfGradProbs: return e * (2.0 * rows * h + block);
    case Kernel::kRingSelfContext:
    case Kernel::kRingSelfGradQ: return e * (block + 3.0 * rows * h);  // + the output read and written
    case Kernel::kRingSelfSoftmax: return 2.0 * e * row;
    case Kernel::kRingSelfSoftmaxBwd: return 3.0 * e * row;
    case Kernel::kRingSelfGradV:
    case Kernel::kRingSelfGradK: return e * (row + rows * h + full);
    default: return 0.0;
  }
}

double Compute::bytes_moved() const {
  const double e = dtype_bytes(dtype);
  const auto& d = dims;
  switch (kernel) {
    case Kernel::kData:
      return 8.0 * double(d[1]) * double(d[2]);
    case Kernel::kEmbedding:
    case Kernel::kEmbeddingBwd:
      return double(d[0]) * (4.0 + 2.0 * e * double(d[1]));
    case Kernel::kLayerNorm:
    case Kernel::kRmsNorm:
      return 2.0 * e * double(d[0]) * double(d[1]) + 8.0 * double(d[0]);
    case Kernel::kLayerNormBwd:
    case Kernel::kRmsNormBwd:
      return 3.0 * e * double(d[0]) * double(d[1]) + 8.0 * double(d[0]);
    case Kernel::kGemm: {
      double c = double(d[0]) * double(d[1]);
      double io = double(d[0]) * double(d[2]) + double(d[2]) * double(d[1]) + c;
      if (flags & kAccumulateOut) io += c;
      return e * io;
    }
    case Kernel::kAttention: {  // read Q, K, V once, write O (flash-style traffic)
      double tokens = double(d[0]) * double(d[1]);
      return e * tokens * double(d[4]) * (2.0 * double(d[2]) + 2.0 * double(d[3]));
    }
    case Kernel::kAttentionBwd: {
      double tokens = double(d[0]) * double(d[1]);
      return 2.0 * e * tokens * double(d[4]) * (2.0 * double(d[2]) + 2.0 * double(d[3]));
    }
    case Kernel::kGelu:
    case Kernel::kAdd:
      // Fused after a dropout (kFusedFromPrev): the dropped branch arrives on chip; read the
      // residual, write the sum.
      if (kernel == Kernel::kAdd && (flags & kFusedFromPrev)) return 2.0 * e * double(d[0]);
      return e * double(d[0]) * (kernel == Kernel::kAdd ? 3.0 : 2.0);
    case Kernel::kGeluBwd:
    case Kernel::kAccumulate:
      return 3.0 * e * double(d[0]);
    case Kernel::kSwiglu:
      return 3.0 * e * double(d[0]) * double(d[1]);
    case Kernel::kSwigluBwd:
      return 5.0 * e * double(d[0]) * double(d[1]);
    case Kernel::kDropout:  // fused into the next kernel: read x, write the mask (1 byte)
      return ((flags & kFusedIntoNext) ? e + 1.0 : 2.0 * e + 1.0) * double(d[0]);
    case Kernel::kDropoutBwd:
      return (2.0 * e + 1.0) * double(d[0]);
    case Kernel::kCrossEntropyMax:
    case Kernel::kCrossEntropySumExp:
    case Kernel::kCrossEntropyTarget:
    case Kernel::kCrossEntropyLoss:
    case Kernel::kCrossEntropyBwd:
      return cross_entropy_bytes(kernel, e, double(d[0]), double(d[0]) * double(d[1]), d[4] != 0);
    case Kernel::kAdam:  // dims[2]: the step's bytes per element (shared/optimizer_bytes.h), when given;
                         // else grad in, fp32 master, m, v read and written, param written
      return double(d[0]) * (d[2] > 0 ? double(d[2]) : e + 24.0 + e);
    case Kernel::kLayerNormPartialMean:  // read x, write a float per row
    case Kernel::kLayerNormPartialVar:
      return e * double(d[0]) * double(d[1]) + 8.0 * double(d[0]);
    case Kernel::kLayerNormApply:  // read x, write y, the row statistics
      return 2.0 * e * double(d[0]) * double(d[1]) + 12.0 * double(d[0]);
    case Kernel::kLayerNormBwdPartialSums:  // read dy and x
      return 2.0 * e * double(d[0]) * double(d[1]) + 16.0 * double(d[0]);
    case Kernel::kLayerNormBwdApply:  // read dy and x, write dx
      return 3.0 * e * double(d[0]) * double(d[1]) + 16.0 * double(d[0]);
    case Kernel::kAllToAllPack:
    case Kernel::kAllToAllUnpack:  // a permutation: every element read once and written once
      return 2.0 * e * double(d[0]) * double(d[1]) * double(d[3] + 2 * d[4]);
    case Kernel::kRingAttention: {  // read Q, the K/V block, the running ctx and lse; write ctx and lse
      const double tokens = 2.0 * double(d[0]) * double(d[1]);
      return e * tokens * double(d[4]) * (3.0 * double(d[2]) + 2.0 * double(d[3])) + 8.0 * tokens * double(d[2]);
    }
    case Kernel::kRingAttentionBwd: {  // twice the forward's, the dK/dV block in fp32
      const double tokens = 2.0 * double(d[0]) * double(d[1]);
      return 2.0 * e * tokens * double(d[4]) * (3.0 * double(d[2]) + 2.0 * double(d[3])) +
             8.0 * tokens * double(d[4]) * double(d[3]) + 4.0 * tokens * double(d[2]);
    }
    case Kernel::kKvPack:
      return 2.0 * e * double(d[0]) * 2.0 * double(d[2]);
    case Kernel::kKvUnpack:
      return (4.0 + e) * double(d[0]) * 2.0 * double(d[2]);
    case Kernel::kRingSelfPack:
    case Kernel::kRingSelfScores:
    case Kernel::kRingSelfSoftmax:
    case Kernel::kRingSelfContext:
    case Kernel::kRingSelfGradV:
    case Kernel::kRingSelfGradProbs:
    case Kernel::kRingSelfSoftmaxBwd:
    case Kernel::kRingSelfGradK:
    case Kernel::kRingSelfGradQ:
    case Kernel::kRingSelfUnpack:
      return ring_self_bytes(kernel, e, d);
    case Kernel::kOpaque:
      return double(d[2]);
  }
  return 0.0;
}

}  // namespace tandem
