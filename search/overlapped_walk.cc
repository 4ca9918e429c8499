#include "search/overlapped_walk.h"

#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <deque>
#include <optional>
#include <thread>
#include <utility>

#include "search_ranks.pb.h"
#include "shared/error.h"
#include "shared/fd_io.h"
#include "sim/forked_call.h"
#include "sim/sweep/sweep_runner.h"

namespace tandem::search {
namespace {

// One process with the simulations (SearchOptions::overlap): the walk's plans and the K
// simulations share `jobs` process slots, so that the cores stay busy from the first plan to the
// last simulation. A point is planned in a forked child (here instead once plans prove faster
// than fork_plans_from_s), which sends its verdict back and waits; when the walk reaches the point (every point
// before it decided, in the one-process order), the parent tells the child to simulate it (the
// point joined the K best: the sweep's own evaluate_point, as run_points runs it) or to stop (out
// of memory, a tie, or past the K-th fit). A point planned here that joins the K best is simulated
// in a forked child of its own. The walk's decisions are walk()'s, taken in the same order on the
// same verdicts, so the result is the same (SearchShortcuts.OverlapChangesNothing); only the
// order in which the processes run differs. Each simulation's memory share is --max-memory /
// min(jobs, the number simulated), as run_points gives it: simulations start once that number is
// known (at least min(jobs, K) points fit, or the walk is over). Of the points waiting for a
// slot, the one whose plan counted the most tasks (PlanVerdict::tasks) starts first, so that the
// simulation left running alone at the end is a short one; each result keeps its place in r.best.
class OverlappedWalk {
 public:
  OverlappedWalk(const std::vector<Valid>& valid, const SearchOptions& options, PointChecker& checker,
                 const std::function<int64_t(const Valid&)>& bound, std::string scenario_path, SearchResult& r)
      : valid_(valid), options_(options), checker_(checker), bound_(bound), path_(std::move(scenario_path)), r_(r) {
    jobs_ = plan_jobs(options);
  }

  // The simulated results, results[i] of r.best[i]; r.best empty: nothing fits (the caller walks
  // again with walk(), whose message names the smallest planned peak).
  std::vector<sweep::PointResult> run() {
    for (;;) {
      decide();
      if (walk_over() && running_sims_ == 0 && ready_.empty()) break;
      const size_t entered = entries_.size();
      if (start_jobs()) continue;              // a plan here: decide it before anything else
      if (entries_.size() != entered) continue;  // points out of memory by their bound: decide them
      wait();
    }
    const size_t walked = decided_;
    if (walked < valid_.size()) r_.pruned[kPrunedByEstimate] = valid_.size() - walked;
    return std::move(results_);
  }

 private:
  // A point of the walk: out of memory by its bound, planned here, or planned by a child.
  struct Entry {
    size_t index = 0;          // in valid_
    bool by_bound = false;
    bool has_verdict = false;
    PlanVerdict verdict;
    std::string error;  // the plan's error (thrown when the walk reaches the point)
    int error_kind = 0;
    int child = -1;  // in children_
  };
  // A forked child: planning (verdict_fd open), waiting for the walk, or simulating.
  struct Child {
    std::optional<sim::ForkedCall> call;
    int verdict_fd = -1, go_fd = -1;
    std::string verdict;
    size_t best = 0;  // simulating: the index in r.best
    bool simulating = false, planning = false;
    std::chrono::steady_clock::time_point forked_at;
  };

  bool walk_over() const { return r_.best.size() >= size_t(options_.top) || (decided_ >= entries_.size() && next_ >= valid_.size()); }
  size_t busy() const { return planning_ + running_sims_; }
  // Simulations may start once their memory share is known (see the class comment).
  bool share_known() const {
    const size_t sim_jobs = options_.jobs > 0 ? size_t(options_.jobs) : std::max(1u, std::thread::hardware_concurrency());
    return walk_over() || r_.best.size() >= std::min(sim_jobs, size_t(options_.top));
  }
  // run_points' share: its workers are min(jobs, points).
  int64_t share() const {
    const size_t sim_jobs = options_.jobs > 0 ? size_t(options_.jobs) : std::max(1u, std::thread::hardware_concurrency());
    const size_t n = std::max<size_t>(1, std::min(sim_jobs, r_.best.size()));
    return options_.limit.max_memory_bytes / int64_t(n);
  }
  std::vector<std::string> overrides(size_t best) const {
    std::vector<std::string> o = r_.sets;
    o.insert(o.end(), r_.best[best].sets.begin(), r_.best[best].sets.end());
    return o;
  }

  // The walk's decisions, in order, as far as verdicts are in (walk() takes the same ones).
  void decide() {
    const bool vary = options_.vary_batch;
    while (!walk_over() && decided_ < entries_.size()) {
      Entry& e = entries_[decided_];
      if (!e.by_bound && !e.has_verdict) return;
      ++decided_;
      ++r_.memory_planned;
      if (e.by_bound) {
        ++r_.out_of_memory;
        ++r_.out_of_memory_by_bound;
        continue;
      }
      if (!e.error.empty()) throw Error(e.error, ErrorKind(e.error_kind));
      if (!e.verdict.fits) {
        ++r_.out_of_memory;
        stop(e);
        continue;
      }
      RankedPoint p;
      p.candidate = valid_[e.index].candidate;
      p.sets = candidate_sets(p.candidate);
      p.estimate = valid_[e.index].estimate;
      p.planned_peak_bytes = e.verdict.peak_bytes;
      auto tie = std::find_if(r_.best.begin(), r_.best.end(), [&](const RankedPoint& b) {
        return score(b.candidate, b.estimate, vary) == score(p.candidate, p.estimate, vary) &&
               b.planned_peak_bytes == p.planned_peak_bytes;
      });
      if (tie != r_.best.end()) {
        ++tie->ties;
        ++r_.pruned[kPrunedAsTie];
        stop(e);
        continue;
      }
      r_.best.push_back(std::move(p));
      results_.emplace_back();
      ready_.push_back({r_.best.size() - 1, e.child, e.verdict.tasks});
    }
    if (walk_over()) {
      // The points entered past the K-th fit are not walked (one process would not plan them).
      for (size_t k = decided_; k < entries_.size(); ++k) stop(entries_[k]);
      entries_.resize(decided_);
      next_ = valid_.size();
    }
  }

  void stop(Entry& e) {
    if (e.child < 0) return;
    Child& c = children_[size_t(e.child)];
    if (c.planning) --planning_;
    close_fds(c);
    c.call.reset();  // SIGKILL and reap: it has nothing more to say
    e.child = -1;
  }

  static void close_fds(Child& c) {
    if (c.verdict_fd >= 0) ::close(c.verdict_fd);
    if (c.go_fd >= 0) ::close(c.go_fd);
    c.verdict_fd = c.go_fd = -1;
  }

  // Starts what the free slots can take: plans first while the walk may still need them (so that
  // it ends early and the simulations fill the cores after it), else simulations. True when a plan
  // ran here (its verdict is in: decide before the next start).
  bool start_jobs() {
    while (busy() < jobs_) {
      const bool may_plan = !walk_over() && r_.best.size() + pending() < size_t(options_.top);
      if (may_plan && enter_next()) {
        if (last_plan_s_ >= 0 && last_plan_s_ < options_.fork_plans_from_s) {
          plan_here(entries_.back());
          return true;
        }
        fork_plan(entries_.back());
        continue;
      }
      if (!ready_.empty() && share_known()) {
        // The longest first (the most tasks; the earliest of equals), so that the last
        // simulation, which runs alone, is a short one.
        auto next = std::max_element(ready_.begin(), ready_.end(),
                                     [](const Ready& a, const Ready& b) { return a.tasks < b.tasks; });
        const Ready go = *next;
        ready_.erase(next);
        start_simulation(go.best, go.child);
        continue;
      }
      return false;
    }
    return false;
  }

  // Undecided entries that may still fit.
  size_t pending() const {
    size_t n = 0;
    for (size_t k = decided_; k < entries_.size(); ++k) n += !entries_[k].by_bound;
    return n;
  }

  // Enters the walk's next points: those over HBM by their bound as such, up to the next one to
  // plan (true; entries_.back()), or false when none is left.
  bool enter_next() {
    while (next_ < valid_.size()) {
      Entry e;
      e.index = next_++;
      e.by_bound = bound_(valid_[e.index]) > r_.hbm_bytes;
      entries_.push_back(e);
      if (!e.by_bound) return true;
    }
    return false;
  }

  void plan_here(Entry& e) {
    const auto start = std::chrono::steady_clock::now();
    try {
      e.verdict = plan_point(checker_, valid_[e.index].candidate);
    } catch (const Error& err) {
      e.error = err.what(), e.error_kind = int(err.kind());
    }
    e.has_verdict = true;
    last_plan_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void fork_plan(Entry& e) {
    int verdict[2], go[2];
    if (::pipe(verdict) != 0) throw Error(std::string("search: pipe: ") + std::strerror(errno), ErrorKind::kFault);
    if (::pipe(go) != 0) {
      ::close(verdict[0]), ::close(verdict[1]);
      throw Error(std::string("search: pipe: ") + std::strerror(errno), ErrorKind::kFault);
    }
    const Candidate candidate = valid_[e.index].candidate;
    std::vector<std::string> point = r_.sets;
    for (const std::string& s : candidate_sets(candidate)) point.push_back(s);
    Child c;
    c.call.emplace(
        [&, candidate, point] {
          ::close(verdict[0]), ::close(go[1]);
          const std::string v = plan_share(checker_, {candidate}, 0);
          const bool sent = write_all(verdict[1], v);
          ::close(verdict[1]);
          char message[1 + sizeof(int64_t)] = {};
          const bool told = sent && read_all(go[0], message, sizeof message);
          ::close(go[0]);
          if (!told || message[0] != 'g') return std::string();
          ResourceLimit limit = options_.limit;
          std::memcpy(&limit.max_memory_bytes, message + 1, sizeof(int64_t));
          return sweep::encode_point_result(sweep::evaluate_point(path_, point, options_.sim, limit));
        },
        "search: a planning process");
    ::close(verdict[1]), ::close(go[0]);
    c.verdict_fd = verdict[0], c.go_fd = go[1];
    c.planning = true;
    c.forked_at = std::chrono::steady_clock::now();
    ++planning_;
    e.child = int(children_.size());
    children_.push_back(std::move(c));
  }

  void start_simulation(size_t best, int child) {
    const int64_t limit_bytes = share();
    if (child >= 0) {
      Child& c = children_[size_t(child)];
      char message[1 + sizeof(int64_t)] = {'g'};
      std::memcpy(message + 1, &limit_bytes, sizeof(int64_t));
      const bool sent = write_all(c.go_fd, std::string(message, sizeof message));
      ::close(c.go_fd), c.go_fd = -1;
      if (!sent) throw Error("search: a planning process did not take its simulation", ErrorKind::kInternal);
      c.simulating = true, c.best = best;
    } else {
      Child c;
      const std::vector<std::string> point = overrides(best);
      ResourceLimit limit = options_.limit;
      limit.max_memory_bytes = limit_bytes;
      c.call.emplace([&, point, limit] { return sweep::encode_point_result(sweep::evaluate_point(path_, point, options_.sim, limit)); },
                     "sweep: the point's process");
      c.simulating = true, c.best = best;
      children_.push_back(std::move(c));
    }
    ++running_sims_;
    progress();
  }

  void progress() {
    if (options_.on_progress) options_.on_progress(sims_done_, walk_over() ? r_.best.size() : size_t(options_.top));
  }

  // Waits for a verdict or a simulation to come in (or half a second, for the progress line).
  void wait() {
    std::vector<pollfd> fds;
    std::vector<size_t> who;
    for (size_t k = 0; k < children_.size(); ++k) {
      Child& c = children_[k];
      if (!c.call) continue;
      if (c.planning) fds.push_back({c.verdict_fd, POLLIN, 0}), who.push_back(k);
      else if (c.simulating) fds.push_back({c.call->fd(), POLLIN, 0}), who.push_back(k);
    }
    if (fds.empty()) throw Error("search: internal: the walk waits with nothing running", ErrorKind::kInternal);
    const int n = ::poll(fds.data(), fds.size(), 500);
    if (n < 0 && errno != EINTR) throw Error(std::string("search: poll: ") + std::strerror(errno), ErrorKind::kFault);
    if (n <= 0) {
      progress();
      return;
    }
    for (size_t i = 0; i < fds.size(); ++i) {
      if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR))) continue;
      Child& c = children_[who[i]];
      if (c.planning) {
        char buf[4096];
        const ssize_t k = ::read(c.verdict_fd, buf, sizeof buf);
        if (k < 0 && errno == EINTR) continue;
        if (k > 0) {
          c.verdict.append(buf, size_t(k));
          continue;
        }
        ::close(c.verdict_fd), c.verdict_fd = -1;
        c.planning = false;
        --planning_;
        last_plan_s_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - c.forked_at).count();
        take_verdict(who[i]);
      } else if (c.call->read_some()) {
        try {
          results_[c.best] = sweep::decode_point_result(c.call->result());
        } catch (const Error& e) {
          results_[c.best].status = sweep::PointStatus::kError;
          results_[c.best].reason = e.what();
        }
        c.call.reset();
        c.simulating = false;
        --running_sims_;
        ++sims_done_;
        progress();
      }
    }
  }

  void take_verdict(size_t child) {
    for (size_t k = decided_; k < entries_.size(); ++k) {
      Entry& e = entries_[k];
      if (e.child != int(child)) continue;
      e.has_verdict = true;
      const std::string& bytes = children_[child].verdict;
      proto::SearchPlanVerdict m;
      if (bytes.empty() || !m.ParseFromString(bytes)) {
        // The child died before its verdict: its own error, or the reason it died.
        children_[child].call->read_some();
        try {
          children_[child].call->result();
          e.error = "search: internal: a planning process sent no verdict", e.error_kind = int(ErrorKind::kInternal);
        } catch (const Error& err) {
          e.error = err.what(), e.error_kind = int(err.kind());
        }
        children_[child].call.reset();
        e.child = -1;
        return;
      }
      if (!m.has()) {
        e.error = m.error().message().empty() ? "search: internal: a planning process planned nothing" : m.error().message();
        e.error_kind = m.error().message().empty() ? int(ErrorKind::kInternal) : m.error().kind();
        return;
      }
      e.verdict = {m.peak_bytes(), m.fits(), m.tasks()};
      return;
    }
  }

  const std::vector<Valid>& valid_;
  const SearchOptions& options_;
  PointChecker& checker_;
  const std::function<int64_t(const Valid&)> bound_;
  std::string path_;
  SearchResult& r_;
  size_t jobs_ = 1;
  std::deque<Entry> entries_;  // the walk's points entered so far, in order
  size_t next_ = 0, decided_ = 0;
  std::vector<Child> children_;
  size_t planning_ = 0, running_sims_ = 0, sims_done_ = 0;
  // The points to simulate: the index in r.best, its child (-1: none) and its tasks.
  struct Ready {
    size_t best = 0;
    int child = -1;
    uint64_t tasks = 0;
  };
  std::deque<Ready> ready_;
  std::vector<sweep::PointResult> results_;
  // The last plan's wall time (here, or from a child's fork to its verdict); -1 before the first:
  // the first plans are forked, so that a slow first plan (seconds for a 105-layer model) does not
  // keep the other slots idle, and planning moves here once plans prove fast (fork_plans_from_s).
  double last_plan_s_ = -1;
};

}  // namespace

std::vector<sweep::PointResult> run_overlapped_walk(const std::vector<Valid>& valid, const SearchOptions& options,
                                                    PointChecker& checker,
                                                    const std::function<int64_t(const Valid&)>& bound,
                                                    const std::string& scenario_path, SearchResult& r) {
  return OverlappedWalk(valid, options, checker, bound, scenario_path, r).run();
}

}  // namespace tandem::search
