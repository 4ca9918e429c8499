#include "shared/sequence_split.h"

#include "shared/step_state.h"

namespace tandem {

bool splits_sequence_axis(const StrategySpec& s) {
  return s.sp > 1 && (s.sp_mode == SpMode::kUlysses || s.sp_mode == SpMode::kRingAttention || s.sp_mode == SpMode::kRing);
}

void apply_sequence_split(const Scenario& sc, int sp_index, StepDims* d) {
  const StrategySpec& s = sc.strategy;
  if (!splits_sequence_axis(s)) return;
  d->sp = s.sp;
  d->seq = sc.model.seq_len / s.sp;
  d->n = d->batch * d->seq;
  d->n_local = d->n;
  d->seq_chunk = sp_index;
  if (s.sp_mode == SpMode::kUlysses) {
    d->ulysses = true;
    d->seq_chunks = s.sp;
    d->att_seq = sc.model.seq_len;  // after the all-to-all: the whole sequence, heads / sp
    d->att_heads = d->heads / s.sp;
    d->att_kv_heads = d->kv_heads / s.sp;
  } else if (s.sp_mode == SpMode::kRing) {
    d->ring_self = true;
    d->seq_chunks = s.sp;  // contiguous chunk i, as Colossal-AI's ring self-attention splits it
    d->att_seq = d->seq;
  } else {
    d->ring_attention = true;
    d->zigzag = true;
    d->seq_chunks = 2 * s.sp;
    d->att_seq = d->seq;
  }
}

GroupId grad_group(const StepState& st) {
  return splits_sequence_axis(st.scenario.strategy) ? st.groups.data_seq(st.coord) : st.groups.dp(st.coord);
}

int grad_group_size(const StepState& st) {
  return st.grid.dp() * (splits_sequence_axis(st.scenario.strategy) ? st.grid.sp() : 1);
}

int grad_group_index(const StepState& st) {
  return splits_sequence_axis(st.scenario.strategy) ? st.coord.dp * st.grid.sp() + st.coord.sp : st.coord.dp;
}

}  // namespace tandem
