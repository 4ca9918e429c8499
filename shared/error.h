// The one exception type of tandem's libraries. Its message is complete and user-facing: for bad
// input it names the file, line and field and the rule broken. Library code never exits; the CLI
// catches Error, prints what(), and exits with exit_code() (2 = bad input).
#pragma once

#include <stdexcept>
#include <string>

namespace tandem {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message, int exit_code = 2)
      : std::runtime_error(message), exit_code_(exit_code) {}
  int exit_code() const { return exit_code_; }

 private:
  int exit_code_;
};

}  // namespace tandem
