#include "shared/fd_io.h"

#include <unistd.h>

#include <cerrno>

namespace tandem {

bool write_all(int fd, const std::string& data) {
  size_t done = 0;
  while (done < data.size()) {
    const ssize_t k = ::write(fd, data.data() + done, data.size() - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    done += size_t(k);
  }
  return true;
}

bool read_all(int fd, char* out, size_t size) {
  size_t done = 0;
  while (done < size) {
    const ssize_t k = ::read(fd, out + done, size - done);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return false;
    done += size_t(k);
  }
  return true;
}

}  // namespace tandem
