// How many buffers each kernel reads and writes at the least (the operand lists of Kernel in
// shared/schedule.h), one table for every executor of Compute tasks: the host driver
// (exec/host_driver.cc) and the CUDA dispatch (exec/cuda/cuda_dispatch.cc). Operands past these
// counts are optional (attention's probabilities, dropout masks).
#pragma once

#include <string>

#include "shared/error.h"
#include "shared/schedule.h"

namespace tandem {

struct KernelArity {
  int inputs = 0;
  int outputs = 0;
};

constexpr KernelArity arity(Kernel k) {
  switch (k) {
    case Kernel::kData: return {0, 2};  // {tokens, targets}
    case Kernel::kEmbedding:
    case Kernel::kEmbeddingBwd: return {2, 1};
    case Kernel::kLayerNorm: return {3, 3};
    case Kernel::kLayerNormBwd: return {5, 3};
    case Kernel::kRmsNorm: return {2, 2};
    case Kernel::kRmsNormBwd: return {4, 2};
    case Kernel::kGemm: return {2, 1};
    case Kernel::kAttention: return {1, 2};     // + probs unless flash, + mask and dropped with dropout
    case Kernel::kAttentionBwd: return {4, 1};  // + probs unless flash, + dropout's
    case Kernel::kGelu: return {1, 1};
    case Kernel::kGeluBwd: return {2, 1};
    case Kernel::kSwiglu: return {1, 1};
    case Kernel::kSwigluBwd: return {2, 1};
    case Kernel::kDropout: return {1, 2};
    case Kernel::kDropoutBwd: return {2, 1};
    case Kernel::kAdd: return {2, 1};
    case Kernel::kAccumulate: return {1, 1};
    case Kernel::kCrossEntropyMax: return {1, 1};
    case Kernel::kCrossEntropySumExp: return {2, 1};
    case Kernel::kCrossEntropyTarget: return {2, 1};
    case Kernel::kCrossEntropyLoss: return {3, 1};
    case Kernel::kCrossEntropyBwd: return {4, 1};
    case Kernel::kAdam: return {1, 4};  // in {grad}, out {master, m, v, param}
    case Kernel::kLayerNormPartialMean: return {1, 1};
    case Kernel::kLayerNormPartialVar: return {2, 1};
    case Kernel::kLayerNormApply: return {5, 2};
    case Kernel::kLayerNormBwdPartialSums: return {5, 1};
    case Kernel::kLayerNormBwdApply: return {6, 3};
    case Kernel::kAllToAllPack:
    case Kernel::kAllToAllUnpack: return {1, 1};
    case Kernel::kRingAttention: return {1, 2};     // + the K/V block after the first step
    case Kernel::kRingAttentionBwd: return {4, 2};  // + the K/V block after the first step
    case Kernel::kKvPack:
    case Kernel::kKvUnpack: return {1, 1};
    case Kernel::kRingSelfPack: return {1, 2};
    case Kernel::kRingSelfScores:
    case Kernel::kRingSelfContext:
    case Kernel::kRingSelfGradV:
    case Kernel::kRingSelfGradProbs:
    case Kernel::kRingSelfSoftmaxBwd:
    case Kernel::kRingSelfGradK:
    case Kernel::kRingSelfGradQ:
    case Kernel::kRingSelfUnpack: return {2, 1};
    case Kernel::kRingSelfSoftmax: return {1, 1};
    case Kernel::kOpaque: return {0, 0};
  }
  return {};
}

// Error (internal: the schedule broke its own contract) when c names fewer operands than its
// kernel reads or writes.
inline void check_arity(const Compute& c) {
  const KernelArity a = arity(c.kernel);
  if (c.inputs.size() < size_t(a.inputs) || c.outputs.size() < size_t(a.outputs))
    throw Error(std::string("exec: kernel ") + to_string(c.kernel) + " needs " + std::to_string(a.inputs) +
                    " inputs and " + std::to_string(a.outputs) + " outputs, the task has " +
                    std::to_string(c.inputs.size()) + " and " + std::to_string(c.outputs.size()),
                ErrorKind::kInternal);
}

}  // namespace tandem
