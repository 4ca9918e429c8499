#include "shared/pipeline_order.h"

#include <algorithm>

namespace tandem {
namespace {

// Megatron's mapping of the k-th virtual micro-batch of an interleaved schedule to (mb, chunk).
PipeOp interleaved_op(int k, bool forward, int stages, int chunks) {
  const int group = k / stages;  // groups of p micro-batches go through one chunk together
  int chunk = group % chunks;
  if (!forward) chunk = chunks - 1 - chunk;
  const int microbatch = (k / (stages * chunks)) * stages + k % stages;
  return {forward, microbatch, chunk};
}

}  // namespace

std::vector<PipeOp> pipeline_order(PpSchedule schedule, int stages, int stage, int micro_batches,
                                   int chunks) {
  std::vector<PipeOp> ops;
  const int m = micro_batches;
  if (schedule == PpSchedule::kGpipe) {
    for (int c = 0; c < chunks; ++c)
      for (int i = 0; i < m; ++i) ops.push_back({true, i, c});
    for (int c = chunks - 1; c >= 0; --c)
      for (int i = 0; i < m; ++i) ops.push_back({false, i, c});
    return ops;
  }
  if (schedule == PpSchedule::k1f1b || chunks == 1) {
    const int warmup = std::min(stages - stage - 1, m);
    for (int i = 0; i < warmup; ++i) ops.push_back({true, i, 0});
    for (int i = 0; i < m - warmup; ++i) {
      ops.push_back({true, warmup + i, 0});
      ops.push_back({false, i, 0});
    }
    for (int i = m - warmup; i < m; ++i) ops.push_back({false, i, 0});
    return ops;
  }
  const int total = m * chunks;
  const int warmup = std::min(2 * (stages - stage - 1) + (chunks - 1) * stages, total);
  for (int k = 0; k < warmup; ++k) ops.push_back(interleaved_op(k, true, stages, chunks));
  for (int k = 0; k < total - warmup; ++k) {
    ops.push_back(interleaved_op(warmup + k, true, stages, chunks));
    ops.push_back(interleaved_op(k, false, stages, chunks));
  }
  for (int k = total - warmup; k < total; ++k) ops.push_back(interleaved_op(k, false, stages, chunks));
  return ops;
}

}  // namespace tandem
