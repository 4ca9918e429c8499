// Progress of a long replay (and of the platform's setup before it) on a terminal: one line on stderr, rewritten in place ('\r'), with the
// simulated time and the fraction of tasks done, at most every `interval_s` of wall time, and
// cleared when the replay ends. Nothing is printed when stderr is not a terminal, so tests, pipes
// and --json output are unaffected.
//
// ProgressLine is the formatting and the throttle (given the wall clock; tests drive it);
// ReplayProgress adds the terminal check, the clock and the writes. The event loop calls
// ReplayProgress::tick only every few thousand events, so the clock is read rarely.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace tandem::sim {

class ProgressLine {
 public:
  // `start_wall_s`: the wall clock when the replay starts; the first line is due `interval_s` later.
  explicit ProgressLine(double start_wall_s, double interval_s = 0.25)
      : last_wall_s_(start_wall_s), interval_s_(interval_s) {}

  // The text to write now ('\r', the line, spaces over a longer previous line), or "" when the
  // last line is younger than the interval.
  std::string update(double wall_s, double sim_s, uint64_t done, uint64_t total);
  // The same with a line of the caller's ("building the platform: node 12 of 125000").
  std::string update(double wall_s, const std::string& line);
  // The text that erases the line ("" when none was written).
  std::string clear();

  // "simulating: t = 1.234567 s, 42.0% of tasks done"
  static std::string format(double sim_s, uint64_t done, uint64_t total);

 private:
  double last_wall_s_;
  double interval_s_;
  size_t width_ = 0;  // longest line written so far
};

class ReplayProgress {
 public:
  ReplayProgress();  // on when stderr is a terminal
  ~ReplayProgress() { finish(); }
  bool on() const { return on_; }
  void tick(double sim_s, uint64_t done, uint64_t total);
  // A line of the caller's, throttled the same way (the platform's setup, before the replay).
  void tick(const std::string& line);
  void finish();

 private:
  bool on_;
  ProgressLine line_;
};

}  // namespace tandem::sim
