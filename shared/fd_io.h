// Whole reads and writes on a pipe or socket descriptor, retried on EINTR and on short transfers:
// what the forked children (sim/forked_call.h, search/overlapped_walk.h) and their parents send.
#pragma once

#include <cstddef>
#include <string>

namespace tandem {

// Writes every byte of `data` to `fd`; false when the descriptor fails or closes first.
bool write_all(int fd, const std::string& data);

// Reads exactly `size` bytes into `out`; false on an error or an end of file before them.
bool read_all(int fd, char* out, size_t size);

}  // namespace tandem
