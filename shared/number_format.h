// One number as text for the reports (tandem sim's summary, tandem search's table): a printf
// format of one double, and a byte count as GiB with two decimals.
#pragma once

#include <cstdint>
#include <string>

namespace tandem {

// snprintf(printf_format, value) into a string (at most 63 characters; one conversion of a double).
std::string format_number(const char* printf_format, double value);

// "12.34 GiB": bytes / 2^30 with two decimals.
std::string format_gib(int64_t bytes);

}  // namespace tandem
