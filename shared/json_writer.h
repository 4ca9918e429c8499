// The one JSON writer of tandem (plan, sim, run, sweep, compare, the Chrome timeline, Chakra's
// comm groups). A streaming writer that places commas for the caller: key() inside an object,
// values one after another inside an array. Its output is RFC 8259 JSON whatever it is given:
//  - strings: `"` and `\` escaped, control characters as \b \f \n \r \t or \u00XX, and every
//    ill-formed UTF-8 sequence (stray continuation byte, truncated sequence, overlong form,
//    surrogate, above U+10FFFF) replaced by U+FFFD, one per maximal ill-formed subpart (Unicode
//    3.9, "U+FFFD Substitution of Maximal Subparts");
//  - numbers: null for infinities and NaN, which JSON cannot hold; a finite double in one of
//    three forms, chosen by the caller so that each report keeps its documented precision:
//    number(v) the shortest text that reads back as v, number(v, digits) printf's %.<digits>g,
//    fixed(v, decimals) printf's %.<decimals>f (all through std::to_chars: no locale).
// Whitespace: Spacing::kSpaced writes ", " between members and ": " after a key (the human-readable
// objects of plan, sim and run); line_break() puts a newline before the next value or closing
// bracket (one record per line in the Chrome timeline).
#pragma once

#include <charconv>
#include <concepts>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

class JsonWriter {
 public:
  enum class Spacing { kCompact, kSpaced };
  explicit JsonWriter(Spacing spacing = Spacing::kCompact) : spaced_(spacing == Spacing::kSpaced) {}

  JsonWriter& begin_object() { return open('{'); }
  JsonWriter& end_object() { return close('}'); }
  JsonWriter& begin_array() { return open('['); }
  JsonWriter& end_array() { return close(']'); }
  JsonWriter& key(std::string_view k);
  JsonWriter& string(std::string_view s);
  JsonWriter& number(double v);
  JsonWriter& number(double v, int significant_digits);
  JsonWriter& fixed(double v, int decimals);
  template <std::integral Int>
    requires(!std::same_as<Int, bool>)
  JsonWriter& integer(Int v) {
    separate();
    char buf[24];
    auto r = std::to_chars(buf, buf + sizeof buf, v);
    out_.append(buf, r.ptr);
    return *this;
  }
  JsonWriter& boolean(bool v);
  JsonWriter& null();
  // A newline before whatever comes next: the next value (after its comma) or closing bracket.
  // Calls add up: two give an empty line.
  JsonWriter& line_break() {
    ++pending_newlines_;
    return *this;
  }

  void reserve(size_t bytes) { out_.reserve(bytes); }
  const std::string& str() const { return out_; }
  // The text so far; the writer is empty afterwards. Throws Error (internal) when a container is
  // still open or a key has no value: a caller's bug, better caught than written half.
  std::string take();

  // `s` as a JSON string literal (quotes included), appended to `out`.
  static void append_quoted(std::string& out, std::string_view s);

 private:
  JsonWriter& open(char c);
  JsonWriter& close(char c);
  void separate(bool is_key = false);
  void flush_newlines();

  std::string out_;
  struct Open {
    bool object;  // else an array
    bool empty;   // no member written yet
  };
  std::vector<Open> open_;
  bool after_key_ = false;
  bool spaced_;
  int pending_newlines_ = 0;
};

}  // namespace tandem
