#include "sim/host_core_share.h"

#include <algorithm>

namespace tandem::sim {

HostCoreShare::HostCoreShare(TimerQueue& timers, double cores, std::vector<double> threads)
    : timers_(timers), cores_(cores), threads_(std::move(threads)), tasks_(threads_.size()) {}

double HostCoreShare::rate() const { return demand_ <= cores_ ? 1.0 : cores_ / demand_; }

void HostCoreShare::advance(double now) {
  if (!runs_.empty()) virtual_ += (now - since_) * rate();
  since_ = now;
}

void HostCoreShare::schedule(double now) {
  ++generation_;  // every earlier timer is stale
  if (runs_.empty()) return;
  const double left = std::max(0.0, runs_.begin()->first - virtual_);
  timers_.shared_compute_done(now + left / rate(), uint32_t(runs_.begin()->second), generation_);
}

void HostCoreShare::start(int unit, double work_s, uint32_t first_task, uint32_t count, double now) {
  advance(now);
  runs_.insert({virtual_ + std::max(0.0, work_s), unit});
  tasks_[size_t(unit)] = {first_task, count};
  demand_ += threads_[size_t(unit)];
  schedule(now);
}

std::optional<Timer> HostCoreShare::done(uint32_t generation, double now) {
  if (generation != generation_ || runs_.empty()) return std::nullopt;
  advance(now);
  const int unit = runs_.begin()->second;
  runs_.erase(runs_.begin());
  demand_ = runs_.empty() ? 0 : demand_ - threads_[size_t(unit)];
  schedule(now);
  Timer t;
  t.t = now;
  t.kind = Timer::kComputeDone;
  t.target = uint32_t(unit);
  t.first_task = tasks_[size_t(unit)].first;
  t.task_count = tasks_[size_t(unit)].second;
  return t;
}

}  // namespace tandem::sim
