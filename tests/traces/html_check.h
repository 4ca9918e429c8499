// A structural check of the HTML the reports write (not a full HTML parser): every element opened
// is closed in order, void elements (meta, br...) and self-closed SVG elements excepted; text holds
// no raw '<'. Returns "" when balanced, else what is wrong and where.
#pragma once

#include <cctype>
#include <set>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::testing {

inline std::string html_balance_problem(std::string_view html) {
  static const std::set<std::string> kVoid = {"meta", "br", "hr", "img", "link", "input"};
  std::vector<std::string> open;
  size_t i = 0;
  while ((i = html.find('<', i)) != std::string_view::npos) {
    const size_t end = html.find('>', i);
    if (end == std::string_view::npos) return "unterminated tag at " + std::to_string(i);
    std::string_view tag = html.substr(i + 1, end - i - 1);
    const size_t at = i;
    i = end + 1;
    if (!tag.empty() && tag[0] == '!') continue;  // <!DOCTYPE html>
    const bool closing = !tag.empty() && tag[0] == '/';
    if (closing) tag.remove_prefix(1);
    size_t n = 0;
    while (n < tag.size() && (std::isalnum(static_cast<unsigned char>(tag[n])) || tag[n] == '-')) ++n;
    const std::string name(tag.substr(0, n));
    if (name.empty()) return "bad tag at " + std::to_string(at);
    if (closing) {
      if (open.empty() || open.back() != name)
        return "</" + name + "> at " + std::to_string(at) + " closes " + (open.empty() ? "nothing" : "<" + open.back() + ">");
      open.pop_back();
    } else if (!(tag.size() > 0 && tag.back() == '/') && !kVoid.count(name)) {
      open.push_back(name);
    }
  }
  if (!open.empty()) return "<" + open.back() + "> never closed";
  return "";
}

inline size_t count_of(std::string_view text, std::string_view what) {
  size_t n = 0;
  for (size_t i = text.find(what); i != std::string_view::npos; i = text.find(what, i + 1)) ++n;
  return n;
}

}  // namespace tandem::testing
