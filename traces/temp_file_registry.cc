#include "traces/temp_file_registry.h"

#include <limits.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <mutex>

namespace tandem {
namespace {

enum SlotState : int { kFree = 0, kFilling = 1, kLive = 2 };

struct Slot {
  std::atomic<int> state{kFree};
  char path[PATH_MAX];
};

// Writers of one process at a time; a sweep's workers are processes of their own.
constexpr int kSlots = 64;
Slot slots[kSlots];

void remove_live_files_and_reraise(int sig) {
  const int saved_errno = errno;
  for (Slot& s : slots)
    if (s.state.load(std::memory_order_acquire) == kLive) ::unlink(s.path);
  errno = saved_errno;
  // SA_RESETHAND restored the default disposition on entry; the signal is blocked until the
  // handler returns, and then ends the process as it would have without the handler.
  ::raise(sig);
}

void install_handlers() {
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction current {};
    if (::sigaction(sig, nullptr, &current) != 0 || current.sa_handler != SIG_DFL ||
        (current.sa_flags & SA_SIGINFO))
      continue;
    struct sigaction sa {};
    sa.sa_handler = remove_live_files_and_reraise;
    sigemptyset(&sa.sa_mask);
    sa.sa_flags = SA_RESETHAND;
    ::sigaction(sig, &sa, nullptr);
  }
}

}  // namespace

int register_temp_file(const char* path) {
  static std::once_flag installed;
  std::call_once(installed, install_handlers);
  const size_t n = std::strlen(path);
  if (n >= PATH_MAX) return -1;
  for (int i = 0; i < kSlots; ++i) {
    int expected = kFree;
    if (!slots[i].state.compare_exchange_strong(expected, kFilling, std::memory_order_acq_rel)) continue;
    std::memcpy(slots[i].path, path, n + 1);
    slots[i].state.store(kLive, std::memory_order_release);
    return i;
  }
  return -1;
}

void unregister_temp_file(int slot) {
  if (slot >= 0 && slot < kSlots) slots[slot].state.store(kFree, std::memory_order_release);
}

}  // namespace tandem
