// The temporary files a process is writing right now, removed if SIGINT or SIGTERM ends it
// (traces/atomic_file.h). The registry is a fixed table that the signal handler reads without
// locks or allocation (async-signal-safe: atomic flags, unlink, sigaction, raise). The handler is
// installed on the first registration, for each of the two signals whose disposition is still the
// default (a program that handles them itself keeps its handler); it unlinks every live temporary
// file, restores the default disposition and re-raises, so the process still dies of the signal.
#pragma once

namespace tandem {

// Registers `path` before the file is created. Returns a slot for unregister_temp_file, or -1 when
// the table is full or the path too long (the file is then only removed on errors, as before).
int register_temp_file(const char* path);
// After the file was renamed into place or removed.
void unregister_temp_file(int slot);

}  // namespace tandem
