// Fields of the tab-separated tables tandem compiles in (sim/data/component_residuals.tsv,
// traces/calibration/host_twin_residuals.tsv): one line's fields, and a positive number checked
// with the place it came from.
#pragma once

#include <string>
#include <vector>

namespace tandem::sim {

// The line's fields between tabs (an empty field where two tabs meet; one field without a tab).
std::vector<std::string> split_tabs(const std::string& line);

// `s` as a finite number > 0, else Error "<at>: field <field> '<s>' must be a finite number > 0".
double parse_positive_field(const std::string& s, const std::string& at, const char* field);

}  // namespace tandem::sim
