// `tandem search -o report.html`: one self-contained HTML page (inline CSS and SVG, no script, no
// network reference) with the Pareto front of throughput against peak memory of the simulated
// points, the K best as a table, the estimate against the simulation (a scatter plot with the
// diagonal, the median and worst error and Kendall's tau, search/agreement.h), and the invalid
// and pruned points by rule. Every point row carries its figures as data attributes
// (data-rank, data-iteration-s, data-tokens-per-s, data-peak-bytes, data-estimate-s; 9
// significant digits) next to the displayed text.
#pragma once

#include <string>

#include "search/search_run.h"

namespace tandem::search {

std::string search_html(const SearchResult& r);

// Writes search_html(r) to `path` atomically (traces/atomic_file.h). Throws Error when it cannot.
void write_search_html(const std::string& path, const SearchResult& r);

}  // namespace tandem::search
