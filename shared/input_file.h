// Reading a user's input file whole (scenario, cluster preset, calibration profile, trace) with
// the checks hostile input needs: the path must name a regular file (a device, FIFO or directory
// is refused: /dev/zero would never end), and its size must be at most `max_bytes` (checked on
// the opened file, so a file swapped after the check is still bounded). Errors are bad input and
// name the path, what the file was to be, and the reason.
#pragma once

#include <cstdint>
#include <string>

namespace tandem {

// Input size limits, generous for what each file holds and small enough to refuse garbage.
inline constexpr int64_t kMaxScenarioBytes = int64_t(16) << 20;     // scenario and preset text
inline constexpr int64_t kMaxProfileBytes = int64_t(1) << 30;       // calibration profile
inline constexpr int64_t kMaxTraceBytes = int64_t(64) << 30;        // measured or predicted trace

// `what` names the role in messages ("scenario", "cluster preset", "calibration profile").
std::string read_input_file(const std::string& path, const char* what, int64_t max_bytes);

// The same checks on an opened file, for readers that stream it rather than read it whole
// (traces): a regular file of at most `max_bytes` at the time of opening. The descriptor reads
// from offset 0 and is closed with the object.
class InputFile {
 public:
  InputFile(const std::string& path, const char* what, int64_t max_bytes);
  ~InputFile();
  InputFile(const InputFile&) = delete;
  InputFile& operator=(const InputFile&) = delete;
  int fd() const { return fd_; }
  int64_t size() const { return size_; }  // as fstat said when the file was opened

 private:
  int fd_ = -1;
  int64_t size_ = 0;
};

}  // namespace tandem
