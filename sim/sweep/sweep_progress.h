// The progress of a sweep on stderr: on a terminal, one line redrawn in place
//   [##########..........]  12/24 points  elapsed 0:41  ETA 0:41
// otherwise (a pipe, a log file) one plain line per completed point. The ETA assumes the
// remaining points take as long on average as the completed ones.
#pragma once

#include <chrono>
#include <cstddef>
#include <cstdio>

namespace tandem::sweep {

class Progress {
 public:
  // tty: redraw in place; else plain lines. Writes to `out` (stderr in the CLI).
  Progress(bool tty, std::FILE* out = stderr);
  // Points done of total; may be called again with the same count (the clock refreshes).
  void update(size_t done, size_t total);
  // Ends the in-place line.
  void finish();

 private:
  bool tty_;
  std::FILE* out_;
  std::chrono::steady_clock::time_point start_;
  size_t last_done_ = size_t(-1);
  bool drawn_ = false;
};

}  // namespace tandem::sweep
