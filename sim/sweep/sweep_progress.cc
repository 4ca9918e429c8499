#include "sim/sweep/sweep_progress.h"

#include <string>

namespace tandem::sweep {

namespace {

std::string clock_text(double s) {
  const long t = long(s + 0.5);
  char buf[32];
  if (t >= 3600) std::snprintf(buf, sizeof buf, "%ld:%02ld:%02ld", t / 3600, t / 60 % 60, t % 60);
  else std::snprintf(buf, sizeof buf, "%ld:%02ld", t / 60, t % 60);
  return buf;
}

}  // namespace

Progress::Progress(bool tty, std::FILE* out) : tty_(tty), out_(out), start_(std::chrono::steady_clock::now()) {}

void Progress::update(size_t done, size_t total) {
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const std::string eta = done > 0 && done < total ? clock_text(elapsed / double(done) * double(total - done))
                          : done == total          ? "0:00"
                                                   : "?";
  if (tty_) {
    constexpr int kWidth = 24;
    const int filled = total ? int(double(done) / double(total) * kWidth) : kWidth;
    std::string bar(size_t(filled), '#');
    bar.append(size_t(kWidth - filled), '.');
    std::fprintf(out_, "\r[%s] %zu/%zu points  elapsed %s  ETA %s \x1b[K", bar.c_str(), done, total,
                 clock_text(elapsed).c_str(), eta.c_str());
    drawn_ = true;
  } else if (done != last_done_ && done > 0) {
    std::fprintf(out_, "tandem sweep: %zu/%zu points done, elapsed %s, ETA %s\n", done, total,
                 clock_text(elapsed).c_str(), eta.c_str());
  }
  last_done_ = done;
  std::fflush(out_);
}

void Progress::finish() {
  if (tty_ && drawn_) std::fprintf(out_, "\n");
  drawn_ = false;
  std::fflush(out_);
}

}  // namespace tandem::sweep
