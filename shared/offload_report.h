// What `tandem plan` says about heterogeneous memory (docs/offload.md): the chunks (offload params
// and auto), each rank class's PCIe traffic per iteration and its device and host peaks, and the
// host memory a node needs against cluster.host_memory_gib. Nothing when strategy.offload is none.
#pragma once

#include <ostream>

#include "shared/plan_summary.h"

namespace tandem {

void print_offload_text(std::ostream& os, const Schedule& schedule, const PlanSummary& summary);

}  // namespace tandem
