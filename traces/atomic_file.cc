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

void after_write(const char* temp_path) {
  if (auto* hook = atomic_file_test_hooks().after_write) hook(temp_path);
}

// Opens an unnamed file in `dir` (O_TMPFILE). Returns -1 where the file system or the kernel
// cannot make one, or /proc (needed to name it later) is missing: the caller then uses a named
// temporary file.
int open_unnamed(const fs::path& dir, const std::string& path) {
  if (::access("/proc/self/fd", F_OK) != 0) return -1;
  const int fd = ::open(dir.empty() ? "." : dir.c_str(), O_TMPFILE | O_WRONLY | O_CLOEXEC, 0666);
  if (fd >= 0) return fd;
  if (errno == EOPNOTSUPP || errno == EISDIR || errno == EINVAL) return -1;
  fail(path, "cannot create a file in " + (dir.empty() ? std::string(".") : dir.string()), errno);
}

}  // namespace

// A registered temporary name (SIGINT/SIGTERM remove it): unlinked and unregistered on
// destruction unless release()d after the rename.
class AtomicFile::TempName {
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

AtomicFile::AtomicFile(std::string path) : path_(std::move(path)) {
  if (path_.empty()) throw Error("an empty output path: name the file to write");
  if (const int fd = descriptor_alias(path_); fd >= 0) {
    // Through the descriptor itself, after what the process wrote there (stdio flushed first).
    std::fflush(nullptr);
    mode_ = Mode::kDescriptor, fd_ = fd, own_fd_ = false;
    return;
  }
  struct stat st;
  if (::stat(path_.c_str(), &st) == 0) {
    if (S_ISDIR(st.st_mode)) throw Error("cannot write " + path_ + ": it is a directory");
    if (!S_ISREG(st.st_mode)) {  // a device, FIFO or socket: written in place, never replaced
      fd_ = ::open(path_.c_str(), O_WRONLY | O_CLOEXEC | O_NOCTTY);
      if (fd_ < 0) fail("cannot open", errno);
      mode_ = Mode::kInPlace;
      return;
    }
  }
  target_ = final_target(path_);
  const fs::path dir = fs::path(target_).parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    fs::create_directories(dir, ec);
    if (ec) fail("cannot create directory " + dir.string(), ec.value());
  }
  if (atomic_file_test_hooks().use_o_tmpfile && (fd_ = open_unnamed(dir, path_)) >= 0) {
    mode_ = Mode::kUnnamed;
    return;
  }
  mode_ = Mode::kNamed;
  temp_ = std::make_unique<TempName>(temp_name(target_));
  fd_ = ::open(temp_->name().c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    if (err == EEXIST) temp_->release();  // not ours
    fail("cannot create " + temp_->name(), err);
  }
}

AtomicFile::~AtomicFile() {
  if (own_fd_ && fd_ >= 0) ::close(fd_);
  // temp_ (kNamed, not committed) unlinks its name; an unnamed file vanishes with its descriptor.
}

void AtomicFile::fail(const std::string& what, int err) const { tandem::fail(path_, what, err); }

void AtomicFile::append(std::string_view bytes) {
  if (committed_) throw Error("cannot write " + path_ + ": append after commit", ErrorKind::kInternal);
  if (const int err = write_all(fd_, bytes)) fail("write failed", err);
}

void AtomicFile::commit() {
  if (committed_) throw Error("cannot write " + path_ + ": committed twice", ErrorKind::kInternal);
  committed_ = true;
  if (mode_ == Mode::kDescriptor) return;
  if (mode_ == Mode::kInPlace) {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail("close failed", errno);
    return;
  }
  if (::fsync(fd_) != 0) fail("fsync failed", errno);
  const fs::path dir = fs::path(target_).parent_path();
  if (mode_ == Mode::kUnnamed) {
    after_write(nullptr);
    const std::string self = "/proc/self/fd/" + std::to_string(fd_);
    if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, target_.c_str(), AT_SYMLINK_FOLLOW) != 0) {
      if (errno != EEXIST) fail("cannot link the new file", errno);
      // The target exists: name the file temporarily, then rename it over the target.
      temp_ = std::make_unique<TempName>(temp_name(target_));
      if (::linkat(AT_FDCWD, self.c_str(), AT_FDCWD, temp_->name().c_str(), AT_SYMLINK_FOLLOW) != 0) {
        const int err = errno;
        temp_->release();  // nothing was created under that name
        fail("cannot link the new file as " + temp_->name(), err);
      }
    }
  } else {
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail("close failed", errno);
  }
  if (temp_) {
    after_write(temp_->name().c_str());
    if (::rename(temp_->name().c_str(), target_.c_str()) != 0) fail("cannot rename " + temp_->name() + " to it", errno);
    temp_->release();
  }
  sync_directory(dir);
}

void write_file_atomic(const std::string& path, std::string_view bytes) {
  AtomicFile file(path);
  file.append(bytes);
  file.commit();
}

}  // namespace tandem
