// The resolver's rules for heterogeneous memory (docs/offload.md): the offload fraction and the
// chunk search's figures, and what parameter offload (params, auto) is generated with so far.
#pragma once

#include "shared/scenario.h"
#include "shared/sequence_rules.h"

namespace tandem {

void check_offload_rules(const StrategySpec& spec, const RuleFail& fail, const RuleSee& see);

}  // namespace tandem
