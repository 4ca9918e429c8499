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

}  // namespace tandem
