// Fields of the tab-separated tables tandem compiles in (sim/data/component_residuals.tsv,
// traces/calibration/host_twin_residuals.tsv): one line's fields, and a positive number checked
// with the place it came from.
#pragma once

#include <string>
#include <vector>

#include "shared/error.h"

namespace tandem::sim {

// The line's fields between tabs (an empty field where two tabs meet; one field without a tab).
std::vector<std::string> split_tabs(const std::string& line);

// `s` as a finite number > 0, else Error "<at>: field <field> '<s>' must be a finite number > 0".
double parse_positive_field(const std::string& s, const std::string& at, const char* field);

// The three fields q10, q50, q90 of a residual table's line, from f[first]: each positive, and
// q10 <= q50 <= q90 (else Error naming `at`).
struct QuantileFields {
  double q10 = 0, q50 = 0, q90 = 0;
};
QuantileFields parse_quantile_fields(const std::vector<std::string>& f, size_t first, const std::string& at);

// A table compiled into the binary, parsed by `parse(text, origin)`: a fault in it is tandem's own
// (ErrorKind::kInternal), never the user's bad input.
template <class Table>
Table parse_compiled_in(Table (*parse)(const std::string&, const std::string&), const std::string& text,
                        const std::string& origin) {
  try {
    return parse(text, origin);
  } catch (const Error& e) {
    throw Error(e.what(), ErrorKind::kInternal);
  }
}

}  // namespace tandem::sim
