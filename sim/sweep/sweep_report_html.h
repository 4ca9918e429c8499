// The HTML page of `tandem sweep -o FILE`: one self-contained file (inline CSS and SVG, no
// script) with the best strategy per size, scaling plots (tokens/s and scaling efficiency against
// GPUs, one line per strategy; a bar chart per strategy when the size is not varied) and the table
// of every point, invalid and out-of-memory points with their reason.
#pragma once

#include <string>

#include "sim/sweep/sweep_table.h"

namespace tandem::sweep {

std::string sweep_html(const SweepTable& t);
// Writes it atomically (traces/atomic_file.h); throws Error naming the path on failure.
void write_sweep_html(const std::string& path, const SweepTable& t);

}  // namespace tandem::sweep
