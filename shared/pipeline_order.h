// The order in which one pipeline stage runs the forward and backward passes of its micro-batches
// (Narayanan et al., SC21, section 2.2; Colossal-AI colossalai/pipeline/schedule/):
//  - GPipe: all forwards, then all backwards.
//  - 1F1B: min(p - stage - 1, m) warm-up forwards, then one forward one backward, then cool-down.
//  - Interleaved 1F1B with v model chunks per stage: warm-up 2(p - stage - 1) + (v - 1)p virtual
//    micro-batches (capped at m*v); micro-batches go through the chunks in groups of p, so m % p
//    must be 0. Chunk c of stage s is virtual stage c*p + s.
#pragma once

#include <vector>

#include "shared/scenario.h"

namespace tandem {

struct PipeOp {
  bool forward = true;
  int microbatch = 0;
  int chunk = 0;
};

std::vector<PipeOp> pipeline_order(PpSchedule schedule, int stages, int stage, int micro_batches,
                                   int chunks);

}  // namespace tandem
