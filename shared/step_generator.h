// The strategy generators: the program of one rank for one training iteration of a decoder
// transformer under data parallelism (gradient buckets, ZeRO 1-3), 1D tensor parallelism
// (Megatron column/row splits, vocabulary-parallel embedding and loss), 2D and 2.5D tensor
// parallelism (Optimus SUMMA, Tesseract; shared/tp2d.h), Megatron sequence parallelism, Ulysses
// and ring-attention sequence parallelism over the sp axis (shared/ulysses.h,
// shared/ring_attention.h), pipeline parallelism (GPipe, 1F1B, interleaved 1F1B) and full or
// selective activation recompute.
//
// Not yet generated (the scenario is rejected with a clear message): 3D tensor parallelism,
// Colossal-AI's ring self-attention. Optimizer offload, parameter offload and Gemini's auto
// placement (Gemini chunks, docs/offload.md) are generated.
#pragma once

#include <memory>
#include <vector>

#include "shared/auto_placement.h"
#include "shared/rank_grid.h"
#include "shared/schedule.h"

namespace tandem {

// strategy.offload auto: the chunks' placement and the per-operator moves the generator makes
// (shared/auto_placement.h), planned on rank 0.
AutoPlacement plan_offload_auto(const Scenario& scenario, const RankGrid& grid);

// Throws Error naming the strategy field when no generator covers the scenario.
std::unique_ptr<ProgramGenerator> make_step_generator(const Scenario& scenario, const RankGrid& grid,
                                                      const std::vector<ProcessGroup>& groups);

}  // namespace tandem
