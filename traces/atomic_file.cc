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

void write_file_atomic(const std::string& path, std::string_view bytes) {
  namespace fs = std::filesystem;
  if (path.empty()) throw Error("cannot write a file with an empty path");
  const fs::path target(path);
  const fs::path dir = target.parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fail(path, "cannot create directory " + dir.string(), ec.value());
  }

  const std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (fd < 0) fail(path, "cannot create " + tmp, errno);

  auto abandon = [&](const std::string& what, int err) {
    if (fd >= 0) ::close(fd);
    ::unlink(tmp.c_str());
    fail(path, what, err);
  };
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      abandon("write failed", errno);
    }
    p += n;
    left -= size_t(n);
  }
  if (::fsync(fd) != 0) abandon("fsync failed", errno);
  int rc = ::close(fd);
  fd = -1;
  if (rc != 0) abandon("close failed", errno);
  if (::rename(tmp.c_str(), path.c_str()) != 0) abandon("cannot rename " + tmp + " to it", errno);

  // Make the rename itself durable; a failure here no longer risks the file's content.
  int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

}  // namespace tandem
