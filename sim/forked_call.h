// Runs a function in a forked child process and brings back what it returned (bytes) or the
// tandem::Error it threw, kind and message kept. SimGrid keeps process-wide state that cannot be
// reset, so every simulation runs in a child of its own (sim/simulation.h), and the sweep runs its
// points in children too (sim/sweep/sweep_runner.h).
//
// The child dies with its parent: it asks the kernel for SIGKILL when the parent goes
// (PR_SET_PDEATHSIG), then checks that the parent it was forked from is still its parent (the
// parent may have died between fork and prctl). So killing `tandem sim` or `tandem sweep` (SIGINT,
// SIGTERM, SIGKILL) never leaves a simulation running, reparented to init.
//
//   std::string bytes = forked_call([&] { return simulate_and_encode(); }, "sim: the simulation process");
//
// The parent should be single-threaded when it forks (the child runs `fn` with only the forking
// thread); its pending stdio output is flushed first so that the child does not write it again.
#pragma once

#include <sys/types.h>

#include <functional>
#include <string>

namespace tandem::sim {

// One child, for callers that wait on several at once (poll on fd()). The destructor kills a child
// still running (SIGKILL) and reaps it.
class ForkedCall {
 public:
  // Forks; `fn` runs in the child, which then leaves with _exit (no atexit handlers, no parent
  // destructors). `what` names the child in messages ("sweep: the point's process").
  ForkedCall(const std::function<std::string()>& fn, std::string what);
  ~ForkedCall();
  ForkedCall(ForkedCall&& other) noexcept;
  ForkedCall& operator=(ForkedCall&& other) noexcept;  // ends this one's child first
  ForkedCall(const ForkedCall&) = delete;

  int fd() const { return fd_; }    // readable when the child has written or exited
  pid_t pid() const { return pid_; }
  // Reads what is available (blocks if nothing is); true once the child closed its end.
  bool read_some();
  // After read_some returned true: reaps the child and returns fn's bytes, or throws its Error
  // (kind and message kept); Error (internal) if the child died without an answer.
  std::string result();

 private:
  void end();  // kill and reap a child still running, close the pipe

  pid_t pid_ = -1;
  int fd_ = -1;
  std::string what_;
  std::string data_;
};

// Forks, waits, returns fn's bytes or throws its Error.
std::string forked_call(const std::function<std::string()>& fn, const std::string& what);

}  // namespace tandem::sim
