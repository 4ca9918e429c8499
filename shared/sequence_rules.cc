#include "shared/sequence_rules.h"

namespace tandem {
namespace {

std::string num(int64_t v) { return std::to_string(v); }

}  // namespace

void check_sequence_rules(const StrategySpec& spec, const ModelSpec& model, const RuleFail& fail, const RuleSee& see) {
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
