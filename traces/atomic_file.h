// Writing an output file (-o, --trace, --timeline, ...) so that readers see the old content or the
// whole new content, never a part, and so that nothing but the named file is ever replaced.
//
// What `path` is decides how it is written:
//  - empty: tandem::Error (bad input), nothing written;
//  - a directory (or a symbolic link to one): tandem::Error (bad input);
//  - a name of an open descriptor (/dev/stdout, /dev/stderr, /dev/fd/N, /proc/self/fd/N): written
//    to that descriptor, after what the process wrote there (stdio is flushed first), whatever it
//    is: with stdout redirected to a file, the file is not replaced behind the shell's back;
//  - an existing non-regular file (character or block device such as /dev/null, FIFO, socket):
//    written in place, opened O_WRONLY without O_CREAT or O_TRUNC, never replaced; a FIFO's open
//    waits for a reader, as a shell redirection does;
//  - a symbolic link (to a file, or dangling): followed, link after link; the replacement happens
//    at the final target, and the link stays a link;
//  - a regular file, or nothing yet: replaced atomically. The bytes go to an unnamed file in the
//    target's directory (O_TMPFILE), are flushed to disk (fsync), and the file is given a name
//    (linkat through /proc/self/fd): the target's own name when it does not exist yet, else a
//    temporary name that is renamed over the target (atomic on POSIX within one file system). The
//    directory is then synced so that the new name survives a crash. A writer killed by any signal
//    before the name is given, SIGKILL included, leaves nothing behind. Where O_TMPFILE or /proc is
//    unavailable, a named temporary file `path.tmp.<pid>.<n>` is written instead.
// A temporary name is registered while it exists (traces/temp_file_registry.h): SIGINT and SIGTERM
// remove it before the process dies; any error removes it and leaves the old file untouched, and
// tandem::Error names the path and the system's reason. Missing parent directories are created.
#pragma once

#include <memory>
#include <string>
#include <string_view>

namespace tandem {

void write_file_atomic(const std::string& path, std::string_view bytes);

// The same, for content written piece by piece (a trace larger than memory): append() as often as
// needed, then commit(). Destroyed without commit(), it leaves the destination as it was and
// removes what it created. The rules above decide at construction how the bytes will travel.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // Error (bad input or fault) naming the path
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void append(std::string_view bytes);
  void commit();  // fsync, give the file its name (or rename over the target), sync the directory
  const std::string& path() const { return path_; }

 private:
  enum class Mode { kDescriptor, kInPlace, kUnnamed, kNamed };
  class TempName;
  [[noreturn]] void fail(const std::string& what, int err) const;

  std::string path_;    // as the user gave it (messages)
  std::string target_;  // the name to replace: path_ after its symbolic links
  Mode mode_ = Mode::kNamed;
  int fd_ = -1;
  bool own_fd_ = true;  // false for kDescriptor: the process's own descriptor stays open
  bool committed_ = false;
  std::unique_ptr<TempName> temp_;  // kNamed: the registered temporary name
};

// For tests only: force the named-temporary-file fallback, and observe the moment the bytes are
// written and synced (temp_path: nullptr while the file is unnamed, else its temporary name).
struct AtomicFileTestHooks {
  bool use_o_tmpfile = true;
  void (*after_write)(const char* temp_path) = nullptr;
};
AtomicFileTestHooks& atomic_file_test_hooks();

}  // namespace tandem
