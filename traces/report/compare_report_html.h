// The HTML page of `tandem compare`: one self-contained file (inline CSS and SVG, no script, no
// external reference) that any browser opens from disk. Sections: the headline (iteration time A
// and B and the error), per stream and per rank tables, per kind and per label tables sorted by
// contribution with a bar chart, a timeline of the slowest rank (A above B on each stream) and the
// device memory of the peak rank. Size is bounded for large traces: at most kMaxRankRows ranks and
// kMaxLabelRows labels are listed (the rest are in --json), the timeline merges spans as
// traces/report/svg_plot.h describes, and plots keep at most two points per pixel.
#pragma once

#include <string>

#include "trace.pb.h"
#include "traces/report/compare.h"

namespace tandem {

inline constexpr size_t kMaxRankRows = 64;
inline constexpr size_t kMaxLabelRows = 60;
inline constexpr size_t kMaxTimelineRects = 4000;

// `a` and `b` are the traces `c` was computed from (the timeline and memory plots read them).
std::string comparison_html(const Comparison& c, const proto::Trace& a, const proto::Trace& b);

// Writes comparison_html atomically (traces/atomic_file.h).
void write_comparison_html(const std::string& path, const Comparison& c, const proto::Trace& a,
                           const proto::Trace& b);

}  // namespace tandem
