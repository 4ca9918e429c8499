#include "sim/tsv_fields.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>

#include "shared/error.h"

namespace tandem::sim {

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  size_t begin = 0;
  while (true) {
    const size_t tab = line.find('\t', begin);
    out.push_back(line.substr(begin, tab == std::string::npos ? std::string::npos : tab - begin));
    if (tab == std::string::npos) break;
    begin = tab + 1;
  }
  return out;
}

double parse_positive_field(const std::string& s, const std::string& at, const char* field) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(s.c_str(), &end);
  if (s.empty() || end != s.c_str() + s.size() || errno != 0 || !std::isfinite(v) || v <= 0)
    throw Error(at + ": field " + field + " '" + s + "' must be a finite number > 0");
  return v;
}

}  // namespace tandem::sim
