// A number that is the whole of a string: "12abc", " 12" and "" are refused (std::from_chars, no
// locale, no leading '+' or spaces). For the readers of hand-written tables.
#pragma once

#include <charconv>
#include <string_view>
#include <system_error>

namespace tandem {

template <class T>
bool parse_whole(std::string_view s, T* out) {
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), *out);
  return ec == std::errc() && end == s.data() + s.size() && !s.empty();
}

}  // namespace tandem
