#include "traces/atomic_file.h"

#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "shared/error.h"
#include "traces/temp_file_registry.h"

namespace tandem {

AtomicFileTestHooks& atomic_file_test_hooks() {
  static AtomicFileTestHooks hooks;
  return hooks;
}

namespace {

namespace fs = std::filesystem;

[[noreturn]] void fail(const std::string& path, const std::string& what, int err) {
  throw Error("cannot write " + path + ": " + what + ": " + std::strerror(err));
}

// Writes every byte (a pipe or a device may take them in parts). Returns 0 or the errno.
int write_all(int fd, std::string_view bytes) {
  const char* p = bytes.data();
  size_t left = bytes.size();
  while (left > 0) {
    const ssize_t n = ::write(fd, p, left);
    if (n < 0) {
      if (errno == EINTR) continue;
      return errno;
    }
    p += n;
    left -= size_t(n);
  }
  return 0;
}

// /dev/stdout and its kind name a descriptor the process already holds, not a file: the number
// of that descriptor, or -1.
int descriptor_alias(const std::string& path) {
  if (path == "/dev/stdout") return 1;
  if (path == "/dev/stderr") return 2;
  for (const char* prefix : {"/dev/fd/", "/proc/self/fd/", "/proc/thread-self/fd/"}) {
    const size_t n = std::strlen(prefix);
    if (path.compare(0, n, prefix) != 0) continue;
    int fd = -1;
    const char* end = path.data() + path.size();
    auto r = std::from_chars(path.data() + n, end, fd);
    return r.ec == std::errc() && r.ptr == end && fd >= 0 ? fd : -1;
  }
  return -1;
}

void write_in_place(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
  if (fd < 0) fail(path, "cannot open", errno);
  const int err = write_all(fd, bytes);
  const int rc = ::close(fd);
  if (err) fail(path, "write failed", err);
  if (rc != 0) fail(path, "close failed", errno);
}

// Follows `path` through symbolic links, one after the other (relative targets against the
// link's directory), to the first name that is not a link: an existing file or a name to create.
std::string final_target(const std::string& path) {
  std::string p = path;
  for (int hops = 0; hops < 40; ++hops) {
    struct stat st;
    if (::lstat(p.c_str(), &st) != 0 || !S_ISLNK(st.st_mode)) return p;
    char buf[PATH_MAX];
    const ssize_t n = ::readlink(p.c_str(), buf, sizeof buf - 1);
    if (n < 0) fail(path, "cannot read the symbolic link " + p, errno);
    std::string t(buf, size_t(n));
    const fs::path dir = fs::path(p).parent_path();
    if (t.empty() || t[0] != '/') t = dir.empty() ? t : (dir / t).string();
    p = t;
  }
  fail(path, "following its symbolic links", ELOOP);
}

void sync_directory(const fs::path& dir) {
  // Makes the new name durable; a failure here no longer risks the file's content.
  const int dfd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
  if (dfd >= 0) {
    ::fsync(dfd);
    ::close(dfd);
  }
}

std::string temp_name(const std::string& target) {
  static std::atomic<unsigned> counter{0};
  return target + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
}

// A registered temporary name: unlinked and unregistered unless release()d after the rename.
class TempName {
 public:
  explicit TempName(std::string name) : name_(std::move(name)), slot_(register_temp_file(name_.c_str())) {}
  ~TempName() {
    if (!released_) ::unlink(name_.c_str());
    unregister_temp_file(slot_);
  }
  TempName(const TempName&) = delete;
  TempName& operator=(const TempName&) = delete;
  const std::string& name() const { return name_; }
  void release() { released_ = true; }

 private:
  std::string name_;
  int slot_;
  bool released_ = false;
};

void after_write(const char* temp_path) {
  if (auto* hook = atomic_file_test_hooks().after_write) hook(temp_path);
}

// Renames the named temporary file over the target.
void rename_into_place(TempName& tmp, const std::string& target, const std::string& path) {
  after_write(tmp.name().c_str());
  if (::rename(tmp.name().c_str(), target.c_str()) != 0) fail(path, "cannot rename " + tmp.name() + " to it", errno);
  tmp.release();
}

// The O_TMPFILE way. Returns false, having named nothing, where the file system or the kernel
// cannot make unnamed files or /proc is missing: the caller then writes a named temporary file.
bool replace_with_unnamed_file(const std::string& target, const fs::path& dir, std::string_view bytes,
                               const std::string& path) {
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd < 0) {
    if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) return false;
    fail(path, "cannot create a file in " + (dir.empty() ? std::string(".") : dir.string()), errno);
  }
  struct Closer {
    int fd;
    ~Closer() { ::close(fd); }
  } closer{fd};
  if (const int err = write_all(fd, bytes)) fail(path, "write failed", err);
  if (::fsync(fd) != 0) fail(path, "fsync failed", errno);
  after_write(nullptr);
  const std::string self = "/proc/self/fd/" + std::to_string(fd);
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, target.c_str(), AT_SYMLINK_FOLLOW) == 0) return true;
  if (errno != EEXIST) {
    if (errno == ENOENT && ::access("/proc/self/fd", F_OK) != 0) return false;
    fail(path, "cannot link the new file", errno);
  }
  TempName tmp(temp_name(target));
  if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, tmp.name().c_str(), AT_SYMLINK_FOLLOW) != 0) {
    tmp.release();  // nothing was created under that name
    fail(path, "cannot link the new file as " + tmp.name(), errno);
  }
  rename_into_place(tmp, target, path);
  return true;
}

void replace_with_named_file(const std::string& target, std::string_view bytes, const std::string& path) {
  TempName tmp(temp_name(target));
  const int fd = ::open(tmp.name().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd < 0) {
    const int err = errno;
    if (err == EEXIST) tmp.release();  // not ours
    fail(path, "cannot create " + tmp.name(), err);
  }
  int err = write_all(fd, bytes);
  const char* what = "write failed";
  if (!err && ::fsync(fd) != 0) err = errno, what = "fsync failed";
  if (::close(fd) != 0 && !err) err = errno, what = "close failed";
  if (err) fail(path, what, err);
  rename_into_place(tmp, target, path);
}

}  // namespace

void write_file_atomic(const std::string& path, std::string_view bytes) {
  if (path.empty()) throw Error("an empty output path: name the file to write");
  if (const int fd = descriptor_alias(path); fd >= 0) {
    // Through the descriptor itself, after what the process wrote there (stdio flushed first).
    std::fflush(nullptr);
    if (const int err = write_all(fd, bytes)) fail(path, "write failed", err);
    return;
  }
  struct stat st;
  if (::stat(path.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Error("cannot write " + path + ": it is a directory");
    if (!S_ISREG(st.st_mode)) return write_in_place(path, bytes);
  }
  const std::string target = final_target(path);
  const fs::path dir = fs::path(target).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fail(path, "cannot create directory " + dir.string(), ec.value());
  }
  if (!atomic_file_test_hooks().use_o_tmpfile || !replace_with_unnamed_file(target, dir, bytes, path))
    replace_with_named_file(target, bytes, path);
  sync_directory(dir);
}

}  // namespace tandem
