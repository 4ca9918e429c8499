// The one exception type of tandem's libraries. Its message is complete and user-facing: for bad
// input it names the file, line and field and the rule broken. Library code never exits; a
// program's main catches Error, prints what(), and exits with exit_code(), which its kind decides.
#pragma once

#include <stdexcept>
#include <string>

namespace tandem {

// What went wrong, and so the exit code a program ends with (README, "Exit codes").
enum class ErrorKind {
  kInternal = 1,     // a bug of tandem: an invariant broke (please report it)
  kBadInput = 2,     // the user's scenario, flags, trace or profile: file, line, field, rule
  kOutOfMemory = 3,  // a device or host ran out of memory (simulated or real)
  kStalled = 4,      // a real run made no progress within its timeout (watchdog)
  kFault = 5,        // the machine failed a run: MPI, CUDA, NCCL, a rank that died, I/O
};

inline int exit_code_of(ErrorKind kind) { return static_cast<int>(kind); }
inline const char* to_string(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::kInternal: return "internal error";
    case ErrorKind::kBadInput: return "bad input";
    case ErrorKind::kOutOfMemory: return "out of memory";
    case ErrorKind::kStalled: return "stalled";
    case ErrorKind::kFault: return "fault";
  }
  return "error";
}

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, ErrorKind kind = ErrorKind::kBadInput)
      : std::runtime_error(message), kind_(kind) {}
  ErrorKind kind() const { return kind_; }
  int exit_code() const { return exit_code_of(kind_); }

 private:
  ErrorKind kind_;
};

}  // namespace tandem
