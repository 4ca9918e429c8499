// Printing a PlanSummary for people (text) and for programs (one JSON object).
#pragma once

#include <ostream>

#include "shared/plan_summary.h"

namespace tandem {

void print_plan_text(std::ostream& os, const Schedule& schedule, const PlanSummary& summary);
void print_plan_json(std::ostream& os, const Schedule& schedule, const PlanSummary& summary);

// "1.50 GiB", "12.0 MiB" ...
std::string format_bytes(double bytes);

}  // namespace tandem
