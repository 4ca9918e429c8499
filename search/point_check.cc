#include "search/point_check.h"

#include <cctype>
#include <cstring>

#include "shared/error.h"
#include "shared/input_file.h"
#include "shared/scenario_limits.h"
#include "shared/scenario_resolver.h"

namespace tandem::search {

PointChecker::PointChecker(const std::string& scenario_path, const std::vector<std::string>& sets, int gpus)
    : sets_(sets), path_(scenario_path) {
  if (gpus > 0) sets_.push_back("cluster.gpus=" + std::to_string(gpus));
  const std::string text = read_input_file(scenario_path, "scenario", kMaxScenarioBytes);
  base_origins_.file = scenario_path;
  parse_text(text, scenario_path, &base_, "", "", nullptr, "", &base_origins_);
  for (const std::string& a : sets_) apply_override(base_, a, base_origins_);
  merge_preset(base_, base_origins_);
  work_ = base_;
  origins_ = base_origins_;
}

bool PointChecker::check(const std::vector<std::string>& point_sets, Scenario* out, std::string* message) {
  try {
    // Every point assigns the same keys, so the work copy needs no reset between points, and an
    // assignment equal to the previous point's is in place already (points come in nested-loop
    // order: most change only the innermost keys).
    if (applied_.size() != point_sets.size()) applied_.assign(point_sets.size(), std::string());
    for (size_t i = 0; i < point_sets.size(); ++i) {
      if (applied_[i] == point_sets[i]) continue;
      applied_[i].clear();  // not in place if apply_override throws
      apply_override(work_, point_sets[i], origins_);
      applied_[i] = point_sets[i];
    }
    *out = Resolver(work_, origins_).run();
    out->origin = path_;
    return true;
  } catch (const Error& e) {
    if (e.kind() != ErrorKind::kBadInput) throw;
    *message = e.what();
    return false;
  }
}

namespace {

bool is_field_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '.'; }

// Removes " (...)" groups that say where a value came from (a file line, a --set, a preset).
std::string drop_origins(const std::string& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == ' ' && i + 1 < s.size() && s[i + 1] == '(') {
      int depth = 0;
      size_t j = i + 1;
      for (; j < s.size(); ++j) {
        if (s[j] == '(') ++depth;
        if (s[j] == ')' && --depth == 0) break;
      }
      const std::string inner = s.substr(i + 2, j - i - 2);
      if (j < s.size() && (inner.rfind("--set ", 0) == 0 || inner.find(".textproto") != std::string::npos ||
                           inner.find("preset of") != std::string::npos)) {
        i = j;
        continue;
      }
    }
    out += s[i];
  }
  return out;
}

}  // namespace

std::string rule_of(const std::string& message) {
  // The field at fault follows the origin: "ORIGIN: part.field: rule".
  std::string rest = message;
  for (size_t at = message.find(": "); at != std::string::npos; at = message.find(": ", at + 1)) {
    size_t end = at + 2;
    while (end < message.size() && is_field_char(message[end])) ++end;
    const std::string field = message.substr(at + 2, end - at - 2);
    if (end + 1 < message.size() && message.compare(end, 2, ": ") == 0 && field.find('.') != std::string::npos &&
        std::isalpha(static_cast<unsigned char>(field[0]))) {
      rest = message.substr(at + 2);
      break;
    }
  }
  rest = drop_origins(rest);
  const size_t line = rest.find('\n');
  if (line != std::string::npos) rest.erase(line);
  // The values -> N: a number after "= ", "got ", "*" or "/" (tp = 8, got 3, 2*4, 8/16); the
  // numbers of the rule itself stay (pp >= 2, zero_stage 1 or 2, tp_mode 2.5d).
  auto value_follows = [&](const std::string& done) {
    if (done.size() >= 3 && (done.compare(done.size() - 3, 3, ">= ") == 0 || done.compare(done.size() - 3, 3, "<= ") == 0))
      return false;  // a bound of the rule
    for (const char* lead : {"= ", "got ", "*", "/", "/("})
      if (done.size() >= std::strlen(lead) && done.compare(done.size() - std::strlen(lead), std::string::npos, lead) == 0)
        return true;
    return false;
  };
  std::string out;
  for (size_t i = 0; i < rest.size();) {
    if (std::isdigit(static_cast<unsigned char>(rest[i])) && value_follows(out)) {
      size_t j = i;
      while (j < rest.size() && (std::isdigit(static_cast<unsigned char>(rest[j])) || rest[j] == '.')) ++j;
      while (j > i && rest[j - 1] == '.') --j;
      out += 'N';
      i = j;
      continue;
    }
    out += rest[i++];
  }
  return out;
}

}  // namespace tandem::search
