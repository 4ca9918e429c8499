#include "shared/sequence_rules.h"

namespace tandem {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

}  // namespace

// Colossal-AI's ring self-attention (sp_mode ring, shared/ring_self_attention.h): what its
// legacy layer (TransformerSelfAttentionRing) and tandem's generation of it cannot combine with.
static void check_ring_self_rules(const StrategySpec& spec, const ModelSpec& model, const RuleFail& fail, const RuleSee& see) {
  const int64_t sp = spec.sp;
  const int64_t kv = model.kv_heads > 0 ? model.kv_heads : model.heads;
  if (spec.tp > 1)
    fail("strategy.tp", "sp_mode ring (Colossal-AI's ring self-attention) runs with tp 1, not " + num(spec.tp) +
                            see("strategy.sp_mode") + " (its layer's linears are not tensor-parallel)");
  else if (kv != model.heads)
    fail("model.kv_heads", "sp_mode ring is multi-head attention: model.kv_heads = " + num(kv) +
                               " must equal model.heads = " + num(model.heads) + see("strategy.sp_mode") +
                               " (Colossal-AI's layer projects Q, K and V of the whole hidden size)");
  else if (model.dropout > 0)
    fail("strategy.sp_mode", "sp_mode ring is generated without attention dropout; set model.dropout = 0" +
                                 see("model.dropout"));
  else if (spec.flash_attention)
    fail("strategy.flash_attention", "sp_mode ring materializes the scores [b, heads, s/sp, s] (RingQK), it "
                                     "cannot run as flash attention; set strategy.flash_attention = false" +
                                         see("strategy.sp_mode"));
  else if (spec.recompute == Recompute::kSelective)
    fail("strategy.recompute", "sp_mode ring is generated with recompute none or full, not selective" +
                                   see("strategy.sp_mode") + " (re-running its core would repeat both ring passes)");
  else if (model.seq_len % sp != 0)
    fail("strategy.sp", "sp_mode ring needs sp = " + num(sp) + " to divide model.seq_len = " + num(model.seq_len) +
                            see("model.seq_len") + " (each rank holds a contiguous chunk of s/sp tokens)");
}

void check_sequence_rules(const StrategySpec& spec, const ModelSpec& model, const RuleFail& fail, const RuleSee& see) {
  if (spec.sp >= 2 && spec.sp_mode == SpMode::kRing && spec.tp_mode == TpMode::k1d)
    return check_ring_self_rules(spec, model, fail, see);
  if (spec.sp < 2 || (spec.sp_mode != SpMode::kUlysses && spec.sp_mode != SpMode::kRingAttention)) return;
  const int64_t tp = spec.tp, sp = spec.sp;
  if (spec.tp_mode != TpMode::k1d)
    fail("strategy.sp_mode", std::string("sp_mode ") + to_string(spec.sp_mode) + " works with tp_mode 1d only, not " +
                                 to_string(spec.tp_mode) + see("strategy.tp_mode"));
  if (spec.sp_mode == SpMode::kUlysses) {
    const int64_t kv = model.kv_heads > 0 ? model.kv_heads : model.heads;
    if (kv % (tp * sp) != 0)
      fail("strategy.sp", "ulysses needs tp*sp = " + num(tp) + "*" + num(sp) + " = " + num(tp * sp) +
                              " to divide the kv heads, model.kv_heads = " + num(kv) + see("model.kv_heads") +
                              " (its all-to-all scatters the K and V heads too)");
  } else if (model.dropout > 0) {
    fail("strategy.sp_mode", "ring_attention runs the attention blockwise without attention dropout; set "
                             "model.dropout = 0" + see("model.dropout"));
  } else if (model.seq_len % (2 * sp) != 0) {
    fail("strategy.sp", "ring_attention needs 2*sp = " + num(2 * sp) + " to divide model.seq_len = " +
                            num(model.seq_len) + see("model.seq_len") +
                            " (the zig-zag split gives each rank chunks i and 2*sp-1-i)");
  }
}

}  // namespace tandem
