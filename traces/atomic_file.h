// Writing a file so that readers see the old content or the whole new content, never a part:
// the bytes go to `path.tmp.<pid>` in the same directory, are flushed to disk (fsync), and the
// temporary file is renamed over `path` (atomic on POSIX within one file system); the directory is
// then synced so that the rename survives a crash. On failure the temporary file is removed, the
// old `path` is left untouched, and tandem::Error names the path and the system's reason.
//
// Two threads of one process must not write the same path at once (they share the temp name).
#pragma once

#include <string>
#include <string_view>

namespace tandem {

// Creates missing parent directories.
void write_file_atomic(const std::string& path, std::string_view bytes);

// The same, for content written piece by piece (a file larger than memory): append() as often as
// needed, then commit(). Destroyed without commit(), it removes the temporary file.
class AtomicFile {
 public:
  explicit AtomicFile(std::string path);  // creates missing parent directories and the temporary file
  ~AtomicFile();
  AtomicFile(const AtomicFile&) = delete;
  AtomicFile& operator=(const AtomicFile&) = delete;

  void append(std::string_view bytes);
  void commit();  // fsync, rename over the path, sync the directory
  const std::string& path() const { return path_; }

 private:
  [[noreturn]] void abandon(const std::string& what, int err);

  std::string path_, tmp_, dir_;
  int fd_ = -1;
};

}  // namespace tandem
