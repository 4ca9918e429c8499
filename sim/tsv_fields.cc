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

QuantileFields parse_quantile_fields(const std::vector<std::string>& f, size_t first, const std::string& at) {
  QuantileFields q;
  q.q10 = parse_positive_field(f.at(first), at, "q10");
  q.q50 = parse_positive_field(f.at(first + 1), at, "q50");
  q.q90 = parse_positive_field(f.at(first + 2), at, "q90");
  if (!(q.q10 <= q.q50 && q.q50 <= q.q90)) throw Error(at + ": fields q10 <= q50 <= q90 must hold");
  return q;
}

}  // namespace tandem::sim
