// Sequence parallelism over the sp axis of the rank grid (strategy.sp_mode ulysses or
// ring_attention; megatron runs over the tensor group and needs none of this): what a rank holds of
// the sequence, and the group its parameter gradients are reduced over.
//
// Each of the sp ranks of a sequence group holds micro_batch * seq_len / sp tokens between the
// attention blocks. Ulysses gives rank i the contiguous chunk i; ring attention splits the
// sequence in 2*sp chunks and gives rank i chunks i and 2*sp-1-i (the zig-zag split of
// Megatron-Core's context parallelism, so that every rank does the same causal work).
// Every rank of a data-and-sequence group computes gradients of the same parameters from
// different tokens: the data-parallel reduction runs over dp*sp ranks (Megatron-Core's
// data_parallel_group_with_cp), and ZeRO shards over them.
#pragma once

#include "shared/schedule.h"

namespace tandem {

struct StepDims;
class StepState;

// Whether the strategy splits the sequence over the sp axis.
bool splits_sequence_axis(const StrategySpec& s);
// Sets the sequence fields of d (shared/step_state.h) for sequence rank sp_index.
void apply_sequence_split(const Scenario& sc, int sp_index, StepDims* d);

// The group the gradients are reduced over (data, or data and sequence), its size and this
// rank's index in it (its ZeRO shard).
GroupId grad_group(const StepState& st);
int grad_group_size(const StepState& st);
int grad_group_index(const StepState& st);

}  // namespace tandem
