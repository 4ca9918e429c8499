#include "sim/forked_call.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <new>
#include <stdexcept>
#include <vector>

#include "shared/error.h"

namespace tandem::sim {
namespace {

TEST(ForkedCall, ReturnsTheChildsBytes) {
  const std::string bytes = forked_call([] { return std::string("a\0b", 3) + std::to_string(::getpid()); }, "test");
  ASSERT_GE(bytes.size(), 4u);
  EXPECT_EQ(bytes.substr(0, 3), std::string("a\0b", 3));
  EXPECT_NE(bytes.substr(3), std::to_string(::getpid()));  // it ran in another process
}

TEST(ForkedCall, KeepsTheErrorKindAndMessage) {
  for (const ErrorKind kind : {ErrorKind::kInternal, ErrorKind::kBadInput, ErrorKind::kOutOfMemory,
                               ErrorKind::kStalled, ErrorKind::kFault}) {
    try {
      forked_call([&]() -> std::string { throw Error("x.textproto:3: strategy.tp: rule", kind); }, "test");
      FAIL() << "no error";
    } catch (const Error& e) {
      EXPECT_EQ(e.kind(), kind);
      EXPECT_STREQ(e.what(), "x.textproto:3: strategy.tp: rule");
    }
  }
  try {
    forked_call([]() -> std::string { throw std::runtime_error("boom"); }, "test");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_STREQ(e.what(), "internal error: boom");
  }
}

TEST(ForkedCall, AChildThatDiesIsAnInternalError) {
  try {
    forked_call([]() -> std::string { std::abort(); }, "test child");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kInternal);
    EXPECT_EQ(std::string(e.what()), "test child died (signal " + std::to_string(SIGABRT) + ")");
  }
}

// Issue 11: out of memory inside the simulation process was exit code 1 (internal error).
TEST(ForkedCall, BadAllocInTheChildIsOutOfMemory) {
  try {
    forked_call([]() -> std::string { throw std::bad_alloc(); }, "test child");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    EXPECT_EQ(std::string(e.what()).rfind("test child ran out of this machine's memory (std::bad_alloc", 0), 0u)
        << e.what();
  }
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "AddressSanitizer's allocator aborts on a failed allocation instead of throwing";
#endif
  // A real allocation failure, whatever the machine's overcommit policy: the child caps its
  // address space (RLIMIT_AS) at 64 GiB, then asks for 1 TiB.
  try {
    forked_call(
        []() -> std::string {
          const rlimit cap{rlim_t(64) << 30, rlim_t(64) << 30};
          if (::setrlimit(RLIMIT_AS, &cap) != 0) return "setrlimit failed";
          std::vector<char> big;
          big.reserve(size_t(1) << 40);
          return "allocated";
        },
        "test child");
    FAIL() << "1 TiB allocated";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory) << e.what();
  }
}

// The kernel's out-of-memory killer ends a process with SIGKILL: read as out of memory.
TEST(ForkedCall, AChildKilledBySigkillIsOutOfMemory) {
  try {
    forked_call([]() -> std::string { ::raise(SIGKILL); return ""; }, "test child");
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::kOutOfMemory);
    EXPECT_EQ(std::string(e.what()).rfind("test child was killed (signal 9), most likely by the kernel for lack of memory", 0), 0u)
        << e.what();
  }
}

// A process standing for `tandem sim` runs a forked call whose child reports its pid and then
// never finishes (as a simulation with an infinite latency would not); the test kills that
// process with `signal` and expects the child killed too (SIGKILL, PR_SET_PDEATHSIG). The test is
// the orphan's subreaper, so it can reap the child and see how it ended.
void expect_child_dies_with_parent(int signal) {
  ASSERT_EQ(::prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
  int report[2];
  ASSERT_EQ(::pipe(report), 0);
  const pid_t parent = ::fork();
  ASSERT_GE(parent, 0);
  if (parent == 0) {
    ::close(report[0]);
    try {
      forked_call(
          [&]() -> std::string {
            const pid_t me = ::getpid();
            if (::write(report[1], &me, sizeof me) != sizeof me) ::_exit(3);
            for (;;) ::pause();
          },
          "spinner");
    } catch (...) {
    }
    ::_exit(0);
  }
  ::close(report[1]);
  pid_t child = -1;
  ASSERT_EQ(::read(report[0], &child, sizeof child), ssize_t(sizeof child));
  ::close(report[0]);

  ASSERT_EQ(::kill(parent, signal), 0);
  int status = 0;
  ASSERT_EQ(::waitpid(parent, &status, 0), parent);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == signal);

  // Bounded wait (not a timing assertion: the kernel kills the child as the parent exits; the
  // bound only keeps a regression from hanging the suite).
  pid_t reaped = 0;
  for (int i = 0; i < 300 && reaped == 0; ++i) {
    reaped = ::waitpid(child, &status, WNOHANG);
    if (reaped == 0) ::usleep(100000);
  }
  if (reaped != child) {
    ::kill(child, SIGKILL);
    ::waitpid(child, &status, 0);
    ADD_FAILURE() << "the child outlived its parent";
  } else {
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  }
  ::prctl(PR_SET_CHILD_SUBREAPER, 0);
}

TEST(ForkedCall, ChildDiesWhenItsParentIsTerminated) { expect_child_dies_with_parent(SIGTERM); }
TEST(ForkedCall, ChildDiesWhenItsParentIsInterrupted) { expect_child_dies_with_parent(SIGINT); }
TEST(ForkedCall, ChildDiesWhenItsParentIsKilled) { expect_child_dies_with_parent(SIGKILL); }

}  // namespace
}  // namespace tandem::sim
