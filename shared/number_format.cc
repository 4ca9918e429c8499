#include "shared/number_format.h"

#include <cstdio>

namespace tandem {

std::string format_number(const char* printf_format, double value) {
  char buf[64];
  std::snprintf(buf, sizeof buf, printf_format, value);
  return buf;
}

std::string format_gib(int64_t bytes) { return format_number("%.2f GiB", double(bytes) / 1073741824.0); }

}  // namespace tandem
