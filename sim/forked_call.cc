#include "sim/forked_call.h"

#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <exception>
#include <new>

#include "forked_reply.pb.h"
#include "shared/error.h"
#include "shared/fd_io.h"
#include "shared/generation_heap.h"

namespace tandem::sim {
namespace {

[[noreturn]] void run_child(const std::function<std::string()>& fn, const std::string& what, int fd, pid_t parent) {
  // Die with the parent; if it is already gone (it died before prctl), leave now.
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0 || ::getppid() != parent) ::_exit(1);
  // Children plan or simulate: they generate programs. Their own heap, on huge pages, the free
  // memory inherited from the parent given back first (each page written there would be copied).
  fresh_generation_heap();
  proto::ForkedReply reply;
  try {
    reply.set_value(fn());
  } catch (const Error& e) {
    reply.mutable_error()->set_kind(int32_t(e.kind()));
    reply.mutable_error()->set_message(e.what());
  } catch (const std::bad_alloc& e) {
    // SimGrid, the replay and the program generator allocate with new: out of memory of this
    // machine (a limit such as ulimit -v, or the memory itself) is exit code 3, not an internal error.
    reply.mutable_error()->set_kind(int32_t(ErrorKind::kOutOfMemory));
    reply.mutable_error()->set_message(what + " ran out of this machine's memory (std::bad_alloc: " + e.what() +
                                       "); make the run smaller or give it more memory");
  } catch (const std::exception& e) {
    reply.mutable_error()->set_kind(int32_t(ErrorKind::kInternal));
    reply.mutable_error()->set_message(std::string("internal error: ") + e.what());
  }
  std::string bytes;
  const bool ok = reply.SerializeToString(&bytes) && write_all(fd, bytes);
  ::close(fd);
  ::_exit(ok ? 0 : 1);
}

}  // namespace

ForkedCall::ForkedCall(const std::function<std::string()>& fn, std::string what) : what_(std::move(what)) {
  std::fflush(nullptr);  // or the child would write the parent's pending output a second time
  int fds[2];
  if (::pipe(fds) != 0) throw Error(what_ + ": pipe: " + std::strerror(errno), ErrorKind::kFault);
  const pid_t parent = ::getpid();
  pid_ = ::fork();
  if (pid_ < 0) {
    const int err = errno;
    ::close(fds[0]);
    ::close(fds[1]);
    throw Error(what_ + ": fork: " + std::strerror(err), ErrorKind::kFault);
  }
  if (pid_ == 0) {
    ::close(fds[0]);
    run_child(fn, what_, fds[1], parent);
  }
  ::close(fds[1]);
  fd_ = fds[0];
}

ForkedCall::ForkedCall(ForkedCall&& other) noexcept
    : pid_(other.pid_), fd_(other.fd_), what_(std::move(other.what_)), data_(std::move(other.data_)) {
  other.pid_ = -1;
  other.fd_ = -1;
}

ForkedCall& ForkedCall::operator=(ForkedCall&& other) noexcept {
  if (this == &other) return *this;
  end();
  pid_ = other.pid_;
  fd_ = other.fd_;
  what_ = std::move(other.what_);
  data_ = std::move(other.data_);
  other.pid_ = -1;
  other.fd_ = -1;
  return *this;
}

ForkedCall::~ForkedCall() { end(); }

void ForkedCall::end() {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  if (pid_ > 0) {
    ::kill(pid_, SIGKILL);
    while (::waitpid(pid_, nullptr, 0) < 0 && errno == EINTR) {
    }
  }
  pid_ = -1;
}

bool ForkedCall::read_some() {
  char buf[1 << 16];
  for (;;) {
    const ssize_t k = ::read(fd_, buf, sizeof buf);
    if (k < 0 && errno == EINTR) continue;
    if (k > 0) {
      data_.append(buf, size_t(k));
      return false;
    }
    return true;  // end of file, or an error: either way the child's answer is complete or lost
  }
}

std::string ForkedCall::result() {
  ::close(fd_);
  fd_ = -1;
  int status = 0;
  while (::waitpid(pid_, &status, 0) < 0 && errno == EINTR) {
  }
  pid_ = -1;
  if (data_.empty()) {
    // SIGKILL that this process did not send: the kernel's out-of-memory killer is what sends it
    // to the largest process when the machine runs out of memory.
    if (WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
      throw Error(what_ + " was killed (signal 9), most likely by the kernel for lack of memory; make the run "
                          "smaller or lower --max-memory so that the estimate refuses it first",
                  ErrorKind::kOutOfMemory);
    throw Error(what_ + " died" +
                    (WIFSIGNALED(status) ? " (signal " + std::to_string(WTERMSIG(status)) + ")" : std::string()),
                ErrorKind::kInternal);
  }
  proto::ForkedReply reply;
  if (!reply.ParseFromString(data_) || reply.outcome_case() == proto::ForkedReply::OUTCOME_NOT_SET)
    throw Error(what_ + ": truncated or corrupt answer (" + std::to_string(data_.size()) + " bytes)",
                ErrorKind::kInternal);
  data_.clear();
  if (reply.has_error()) {
    const int kind = reply.error().kind();
    const bool known = kind >= int(ErrorKind::kInternal) && kind <= int(ErrorKind::kFault);
    throw Error(reply.error().message(), known ? ErrorKind(kind) : ErrorKind::kInternal);
  }
  return std::move(*reply.mutable_value());
}

std::string forked_call(const std::function<std::string()>& fn, const std::string& what) {
  ForkedCall call(fn, what);
  while (!call.read_some()) {
  }
  return call.result();
}

}  // namespace tandem::sim
