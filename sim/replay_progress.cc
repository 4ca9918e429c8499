#include "sim/replay_progress.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

namespace tandem::sim {

namespace {

double wall_clock_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

void write_stderr(const std::string& s) {
  if (s.empty()) return;
  std::fwrite(s.data(), 1, s.size(), stderr);
  std::fflush(stderr);
}

}  // namespace

std::string ProgressLine::format(double sim_s, uint64_t done, uint64_t total) {
  const double pct = total ? 100.0 * double(done) / double(total) : 100.0;
  char buf[96];
  std::snprintf(buf, sizeof buf, "simulating: t = %.6f s, %.1f%% of tasks done", sim_s, pct);
  return buf;
}

std::string ProgressLine::update(double wall_s, double sim_s, uint64_t done, uint64_t total) {
  if (wall_s - last_wall_s_ < interval_s_) return "";
  return update(wall_s, format(sim_s, done, total));
}

std::string ProgressLine::update(double wall_s, const std::string& line) {
  if (wall_s - last_wall_s_ < interval_s_) return "";
  last_wall_s_ = wall_s;
  std::string text = "\r";
  text += line;
  const size_t n = text.size() - 1;
  if (n < width_) text.append(width_ - n, ' ');
  width_ = std::max(width_, n);
  return text;
}

std::string ProgressLine::clear() {
  if (!width_) return "";
  std::string s(width_ + 2, ' ');
  s.front() = s.back() = '\r';
  width_ = 0;
  return s;
}

ReplayProgress::ReplayProgress() : on_(::isatty(STDERR_FILENO) == 1), line_(wall_clock_s()) {}

void ReplayProgress::tick(double sim_s, uint64_t done, uint64_t total) {
  if (on_) write_stderr(line_.update(wall_clock_s(), sim_s, done, total));
}

void ReplayProgress::tick(const std::string& line) {
  if (on_) write_stderr(line_.update(wall_clock_s(), line));
}

void ReplayProgress::finish() {
  if (on_) write_stderr(line_.clear());
}

}  // namespace tandem::sim
