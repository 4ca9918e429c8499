// The validator's rules for sequence parallelism over the sp axis (strategy.sp_mode ulysses and
// ring_attention), called by the strategy resolver (shared/strategy_rules.cc) with its `fail`
// (which names the file, line and field) and `see` (the place of another field).
#pragma once

#include <functional>
#include <string>

#include "shared/scenario.h"

namespace tandem {

using RuleFail = std::function<void(const std::string& field, const std::string& rule)>;
using RuleSee = std::function<std::string(const std::string& field)>;

// Ulysses: heads and kv heads divide by tp*sp (its all-to-all scatters heads). Ring attention:
// seq_len divides by 2*sp (the zig-zag split), tp_mode 1d. Neither with Megatron-SP (sp_mode is
// one choice) nor with 2D/2.5D/3D tensor parallelism. Ring self-attention (sp_mode ring): tp 1,
// multi-head (kv_heads = heads), no attention dropout, no flash attention (it keeps the scores),
// recompute none or full, seq_len divisible by sp.
void check_sequence_rules(const StrategySpec& spec, const ModelSpec& model, const RuleFail& fail, const RuleSee& see);

}  // namespace tandem
