#include "shared/input_file.h"

#include <algorithm>
#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "shared/error.h"

namespace tandem {

namespace {

// Closes the descriptor on every path out of read_input_file.
class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

std::string mib(int64_t bytes) { return std::to_string((bytes + (int64_t(1) << 20) - 1) >> 20) + " MiB"; }

}  // namespace

std::string read_input_file(const std::string& path, const char* what, int64_t max_bytes) {
  const std::string head = (path.empty() ? std::string("\"\"") : path) + ": cannot read " + what + ": ";
  if (path.empty()) throw Error(head + "the path is empty");
  // O_NONBLOCK: opening a FIFO with no writer must not hang; a regular file ignores the flag.
  Fd fd(::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK));
  if (fd.get() < 0) throw Error(head + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd.get(), &st) != 0) throw Error(head + std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw Error(head + "it is a directory");
  if (!S_ISREG(st.st_mode)) throw Error(head + "not a regular file (a device, FIFO or socket)");
  if (st.st_size > max_bytes)
    throw Error(head + "it holds " + std::to_string(int64_t(st.st_size)) + " bytes, more than the " + mib(max_bytes) +
                " a " + what + " may have");
  std::string bytes;
  bytes.resize(size_t(st.st_size));
  size_t at = 0;
  for (;;) {
    if (at == bytes.size()) {
      // The file may have grown since fstat: read on, within the limit.
      if (int64_t(bytes.size()) >= max_bytes + 1) break;
      bytes.resize(std::min<size_t>(size_t(max_bytes) + 1, std::max<size_t>(bytes.size() * 2, 4096)));
    }
    const ssize_t n = ::read(fd.get(), bytes.data() + at, bytes.size() - at);
    if (n < 0) {
      if (errno == EINTR) continue;
      throw Error(head + std::strerror(errno));
    }
    if (n == 0) break;
    at += size_t(n);
  }
  if (int64_t(at) > max_bytes)
    throw Error(head + "it holds more than the " + mib(max_bytes) + " a " + what + " may have");
  bytes.resize(at);
  return bytes;
}

}  // namespace tandem
