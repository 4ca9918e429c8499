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

std::string mib(int64_t bytes) { return std::to_string((bytes + (int64_t(1) << 20) - 1) >> 20) + " MiB"; }

std::string head_of(const std::string& path, const char* what) {
  return (path.empty() ? std::string("\"\"") : path) + ": cannot read " + what + ": ";
}

}  // namespace

InputFile::InputFile(const std::string& path, const char* what, int64_t max_bytes) {
  const std::string head = head_of(path, what);
  if (path.empty()) throw Error(head + "the path is empty");
  // O_NONBLOCK: opening a FIFO with no writer must not hang; a regular file ignores the flag.
  fd_ = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
  if (fd_ < 0) throw Error(head + std::strerror(errno));
  struct stat st {};
  std::string problem;
  if (::fstat(fd_, &st) != 0) problem = std::strerror(errno);
  else if (S_ISDIR(st.st_mode)) problem = "it is a directory";
  else if (!S_ISREG(st.st_mode)) problem = "not a regular file (a device, FIFO or socket)";
  else if (st.st_size > max_bytes)
    problem = "it holds " + std::to_string(int64_t(st.st_size)) + " bytes, more than the " + mib(max_bytes) + " a " +
              what + " may have";
  if (!problem.empty()) {
    ::close(fd_);
    throw Error(head + problem);
  }
  size_ = int64_t(st.st_size);
}

InputFile::~InputFile() {
  if (fd_ >= 0) ::close(fd_);
}

std::string read_input_file(const std::string& path, const char* what, int64_t max_bytes) {
  const std::string head = head_of(path, what);
  const InputFile file(path, what, max_bytes);
  std::string bytes;
  bytes.resize(size_t(file.size()));
  size_t at = 0;
  for (;;) {
    if (at == bytes.size()) {
      // The file may have grown since fstat: read on, within the limit.
      if (int64_t(bytes.size()) >= max_bytes + 1) break;
      bytes.resize(std::min<size_t>(size_t(max_bytes) + 1, std::max<size_t>(bytes.size() * 2, 4096)));
    }
    const ssize_t n = ::read(file.fd(), bytes.data() + at, bytes.size() - at);
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
