#include "traces/atomic_file.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "shared/error.h"

namespace tandem {
namespace {

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw Error("cannot write " + path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  namespace fs = std::filesystem;
  if (path_.empty()) throw Error("cannot write a file with an empty path");
  const fs::path dir = fs::path(path_).parent_path();
  dir_ = dir.string();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fail(path_, "cannot create directory " + dir_, ec.value());
  }
  tmp_ = path_ + ".tmp." + std::to_string(::getpid());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd_ < 0) fail(path_, "cannot create " + tmp_, errno);
}

AtomicFile::~AtomicFile() {
  if (fd_ < 0) return;
  ::close(fd_);
  ::unlink(tmp_.c_str());
}

void AtomicFile::abandon(const std::string& what, int err) {
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  ::unlink(tmp_.c_str());
  fail(path_, what, err);
}

void AtomicFile::append(std::string_view bytes) {
  if (fd_ < 0) throw Error("cannot write " + path_ + ": written after commit or failure", ErrorKind::kInternal);
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd_, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write failed", errno);
    }
    p += n;
    left -= size_t(n);
  }
}

void AtomicFile::commit() {
  if (fd_ < 0) throw Error("cannot write " + path_ + ": committed twice or after failure", ErrorKind::kInternal);
  if (::fsync(fd_) != 0) abandon("fsync failed", errno);
  const int rc = ::close(fd_);
  fd_ = -1;
  if (rc != 0) abandon("close failed", errno);
  if (::rename(tmp_.c_str(), path_.c_str()) != 0) abandon("cannot rename " + tmp_ + " to it", errno);
  // Make the rename itself durable; a failure here no longer risks the file's content.
  const int dfd = ::open(dir_.empty() ? "." : dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.append(bytes);
  file.commit();
}

}  // namespace tandem
